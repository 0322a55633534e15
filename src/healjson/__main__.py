"""`python -m healjson` runs the command line."""

from healjson._cli import main

main()
