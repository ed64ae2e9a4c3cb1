import sys

from migrator.cli.main import main

sys.exit(main())
