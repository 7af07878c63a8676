from rocbuild.cli.app import run

run()
