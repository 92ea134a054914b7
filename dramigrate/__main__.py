from dramigrate.start import main

main()
