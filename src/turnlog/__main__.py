from turnlog.cli import main

main()
