"""C code read as text (tokens, preprocessor directives) and through the two parsers rclify uses
(libclang: cparse, Coccinelle: spatch)."""
