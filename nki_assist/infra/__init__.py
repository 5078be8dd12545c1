"""Process-level helpers with no NKI knowledge: atomic file writes (atomic), secret redaction in anything
shown or stored (redact), optional-dependency messages (extras), lazily loaded package names (lazy)."""
