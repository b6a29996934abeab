"""What both wings' pytest hooks share: report data, the plugin's own crashes, marker checks."""
