"""The shared floor: what both wings use (case naming and copies, capture, files, tables)."""
