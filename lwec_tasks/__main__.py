import sys

from lwec_tasks.cli import main

sys.exit(main())
