from multisched.cli import main

raise SystemExit(main())
