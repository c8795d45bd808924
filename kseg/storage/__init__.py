"""Files and directories: segments, partition dirs, log.dirs roots, the writer."""
