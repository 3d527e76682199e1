"""CEL selection rules: compile, decode the checked AST, bound the cost, bound the regexes."""
