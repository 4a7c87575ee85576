"""I/O studies: tape efficiency, worker-node disks, policy comparisons. Nothing imports studies."""
