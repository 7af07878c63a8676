from rocbuild.cli.entry import run

run()
