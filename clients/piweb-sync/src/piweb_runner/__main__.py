from piweb_runner.cli import main

raise SystemExit(main())
