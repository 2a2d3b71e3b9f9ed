"""rclify's differential fuzzer: generated programs, original against transformed (docs/fuzzing.md)."""
