from ptxsim.cli import main

raise SystemExit(main())
