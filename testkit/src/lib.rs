//! Test support: locate JDK 25 and run its `jfr` tool.
