"""Renders chat templates the way transformers' apply_chat_template does (Python's Jinja in an
immutable sandbox, trim_blocks and lstrip_blocks, loop controls, its tojson, raise_exception and
strftime_now). Reads a JSON list of {"template", "context"} on stdin and writes a JSON list of
{"text"} or {"error"} on stdout."""
import json
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)

compiled = {}
out = []
for job in json.load(sys.stdin):
    try:
        source = job["template"]
        if source not in compiled:
            compiled[source] = env.from_string(source)
        out.append({"text": compiled[source].render(**job["context"])})
    except Exception as err:  # a template error is an answer, as it is for transformers' caller
        out.append({"error": type(err).__name__})
json.dump(out, sys.stdout)
