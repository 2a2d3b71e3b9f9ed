from rclify.cli import main

raise SystemExit(main())
