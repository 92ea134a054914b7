from dramigrate.cli import main

main()
