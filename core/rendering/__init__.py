"""What every provider renderer shares, the Gateway API objects, the serving pods' labels and
ports, and the cross-object invariants of one render."""
