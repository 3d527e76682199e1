"""What gets rendered: the objects of each ModelDeployment, the strict schema check, the schema
pack, the output folders, their ownership and the shards."""
