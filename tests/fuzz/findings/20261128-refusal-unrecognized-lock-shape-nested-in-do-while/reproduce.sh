#!/bin/sh
# Prints rclify's verdict on the reduced program: the bug is there while it says "hybrid ... unrecognized-lock-shape".
cd "$(dirname "$0")" && rm -rf /tmp/rclify-finding-$$ && cp -r reduced /tmp/rclify-finding-$$ && cd ../../../.. && python3 -m rclify transform /tmp/rclify-finding-$$ --dry-run 2>&1 | grep -E "^rclify transform|hybrid:"; rm -rf /tmp/rclify-finding-$$
