from piweb_sync.cli import main

raise SystemExit(main())
