source "$(dirname "$0")/lib.sh"; exit 77
