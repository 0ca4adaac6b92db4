"""A conform implementation that answers every request with the same claim (argv[1]: a JSON object such as
{"kept": [...]} or {"kept_pages": [[...], ...]}): lets `kvaudit conform --replay` judge exactly the claim the CLI
and Python judge."""
import json
import sys

claim = json.loads(open(sys.argv[1]).read())
for line in sys.stdin:
    print(json.dumps({"id": json.loads(line)["id"], **claim}), flush=True)
