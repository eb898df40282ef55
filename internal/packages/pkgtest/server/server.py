"""A tiny MCP server over stdio in plain Python (no dependencies but the
test's own hangar-greeting, when it is installed): the PyPI package the
package runtime tests install. __NAME__, __VERSION__ and __TOOLS__ are
filled in when the package is made."""
import json
import os
import sys

NAME = "__NAME__"
VERSION = "__VERSION__"
TOOLS = __TOOLS__

try:
    from hangar_greeting import greet
except ImportError:  # not a dependency of this one
    def greet():
        return "no greeting"


def text(s):
    return {"content": [{"type": "text", "text": str(s)}]}


def call(name, args):
    if name == "env":
        return text(os.environ.get((args or {}).get("name", ""), ""))
    if name == "whoami":
        try:
            # Its own code: owned by its user, so only a read-only root stops this.
            with open(os.path.join(os.path.dirname(__file__), "probe"), "w") as f:
                f.write("x")
            writable = True
        except OSError:
            writable = False
        return text(json.dumps({"uid": os.getuid(), "home": os.path.expanduser("~"), "code_writable": writable, "version": VERSION}))
    return text("%s from %s@%s: %s %s" % (name, NAME, VERSION, greet(), json.dumps(args or {}, separators=(",", ":"))))


def main():
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "id" not in msg:
            continue
        out = {"jsonrpc": "2.0", "id": msg["id"]}
        method = msg.get("method")
        params = msg.get("params") or {}
        if method == "initialize":
            out["result"] = {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                             "capabilities": {"tools": {}}, "serverInfo": {"name": NAME, "version": VERSION}}
        elif method == "ping":
            out["result"] = {}
        elif method == "tools/list":
            out["result"] = {"tools": [{"name": t, "description": "%s of %s" % (t, NAME),
                                        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}} for t in TOOLS]}
        elif method == "tools/call":
            if params.get("name") not in TOOLS:
                out["error"] = {"code": -32602, "message": "unknown tool %s" % params.get("name")}
            else:
                out["result"] = call(params["name"], params.get("arguments"))
        else:
            out["error"] = {"code": -32601, "message": "method not found"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
