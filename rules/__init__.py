"""Rule packs, workload kinds and their JSON Schemas (data, shipped in the wheel)."""
