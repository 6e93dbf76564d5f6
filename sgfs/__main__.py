from sgfs.cli import main

main()
