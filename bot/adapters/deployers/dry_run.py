"""The out-of-the-box deploy command: says what it would deploy and changes nothing.

Set DEPLOY_COMMAND to your real deploy script to ship for real.
"""

import os
import sys
import time


def main(argv: list[str]) -> int:
    service, tag, environment = (argv + ["?", "?", "?"])[:3]
    print(f"dry run: deploying {service} {tag} to {environment} (deploy id {os.environ.get('DEPLOY_ID', '-')})")
    time.sleep(0.5)
    print("dry run: nothing was changed; set DEPLOY_COMMAND to deploy for real")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
