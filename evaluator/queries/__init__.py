"""SQL behind the pages and the reporting commands: one module per page family."""
