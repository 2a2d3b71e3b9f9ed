from rclify.targets.memcached.source import main

raise SystemExit(main())
