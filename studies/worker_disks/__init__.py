"""Worker-node disks (HDD, RAID, SSD) under concurrent analysis jobs (seeds 000, 001, 002)."""
