"""``python -m dataflow`` runs the CLI."""
from dataflow.cli.main import main

main()
