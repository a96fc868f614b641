#!/usr/bin/env python3
"""A local model server that answers the LLM proposer from recorded replies.

    llm_replay_server.py REPLIES_DIR SCRIPT.json LOG.jsonl [BODIES.jsonl]

It serves the OpenAI chat completions API (any path ending in
/chat/completions) and the Anthropic Messages API (/v1/messages) on
127.0.0.1, on an ephemeral port, and prints "PORT <n>" once it listens.

The system prompt says which agent asks ("Your role: the planner" ...).
The planner gets REPLIES_DIR/planner.txt, the summarizer summarizer.txt,
and the executor, for the first kernel of SCRIPT (a JSON object: kernel
name -> list of reply files) named in its prompt, the next file of that
kernel's list, in turn. Each request is appended to LOG.jsonl (path, agent,
kernel, reply file, whether the prompt carried compiler feedback and
whether an authorization header came), so a test can count them. Standard library only."""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPLIES, SCRIPT, LOGPATH = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
BODIES = sys.argv[4] if len(sys.argv) > 4 else None  # every request body, one per line
NEXT = {}
LOCK = threading.Lock()


def read(name):
    with open(f"{REPLIES}/{name}") as f:
        return f.read()


def answer(body):
    system = body.get("system") or ""
    texts = []
    for m in body.get("messages", []):
        c = m.get("content")
        texts.append(c if isinstance(c, str) else json.dumps(c))
        if m.get("role") == "system" and isinstance(c, str):
            system += c
    prompt = "\n".join(texts)
    if "Your role: the planner" in system:
        return "planner", None, "planner.txt"
    if "Your role: the summarizer" in system:
        return "summarizer", None, "summarizer.txt"
    if "Your role: the executor" in system:
        for kernel, files in SCRIPT.items():
            if kernel in prompt:
                with LOCK:
                    i = NEXT.get(kernel, 0)
                    NEXT[kernel] = i + 1
                return "executor", kernel, files[i % len(files)]
        return "executor", None, "bad_no_code.txt"
    return "unknown", None, "bad_no_code.txt"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(n) or b"{}")
        agent, kernel, name = answer(body)
        text = read(name)
        if BODIES:
            with LOCK, open(BODIES, "a") as f:
                f.write(json.dumps(body) + "\n")
        with LOCK, open(LOGPATH, "a") as log:
            log.write(json.dumps({"path": self.path, "agent": agent, "kernel": kernel,
                                  "reply": name,
                                  "feedback": "did not compile" in json.dumps(body),
                                  "auth": bool(self.headers.get("Authorization") or
                                               self.headers.get("x-api-key"))}) + "\n")
        model = body.get("model", "replay")
        tokens_in, tokens_out = sum(len(t) for t in json.dumps(body)) // 4, len(text) // 4
        if self.path.endswith("/v1/messages"):
            out = {"id": "msg_replay", "type": "message", "role": "assistant", "model": model,
                   "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                   "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}}
        else:
            out = {"id": "chatcmpl-replay", "object": "chat.completion", "model": model,
                   "choices": [{"index": 0, "finish_reason": "stop",
                                "message": {"role": "assistant", "content": text}}],
                   "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                             "total_tokens": tokens_in + tokens_out}}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("PORT", server.server_address[1], flush=True)
server.serve_forever()
