"""Inspection: state as DataFrames, snapshots and diffs (imports pandas: load lazily)."""
