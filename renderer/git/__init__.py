"""How files reach Git: the git runner, the commit strategies, locks and recovery, push."""
