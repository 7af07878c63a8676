from rocbuild.cli import main

raise SystemExit(main())
