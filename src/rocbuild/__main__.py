from rocbuild.cli.app import main

raise SystemExit(main())
