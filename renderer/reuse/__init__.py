"""What lets a render skip work: the stamp, the render cache, the parsed-sources cache, the
digests they key on, the clean-tree check and the delta of changed sources."""
