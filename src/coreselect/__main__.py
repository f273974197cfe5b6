from coreselect.cli import main

main()
