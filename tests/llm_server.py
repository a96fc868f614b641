#!/usr/bin/env python3
"""A local LLM server that misbehaves on request, for tests/test_llm.c and
tests/llm_e2e.sh.

It serves the OpenAI chat completions API (any path ending in
/chat/completions) and the Anthropic Messages API (/v1/messages) on
127.0.0.1, on an ephemeral port, plus a second listener that a redirect
points at. It prints "PORTS <main> <other>" on stdout once both listen.

The last user message chooses the behaviour: "scenario=NAME id=TAG". A
scenario ending in "-once" fails on the first attempt of its TAG and answers
normally after that. "--scenario NAME" on the command line is the behaviour
of messages that name none (an optimize run's prompts, for llm_e2e.sh):
"401" refuses every request, "echokey" answers each agent with text that
quotes the credential header it was sent (the planner with a plan that
parses, so that the quote travels on into the executor's prompt),
"executor400" answers the planner with a plan and refuses the executor.

GET /_log returns every request both listeners saw (method, path,
lower-cased headers, body, which listener), in order, so a test can check
where the key went, the headers, and how many attempts there were.
Standard library only."""
import email.utils
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = []
ATTEMPTS = {}
DEFAULT_SCENARIO = "ok"
LOCK = threading.Lock()
PORTS = {}


def reply_body(api, model, text):
    if api == "anthropic":
        return {
            "id": "msg_test", "type": "message", "role": "assistant", "model": model,
            "content": [
                {"type": "thinking", "thinking": "not part of the answer"},
                {"type": "text", "text": text},
                {"type": "text", "text": " (end)"},
            ],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 100, "output_tokens": 20,
                      "cache_read_input_tokens": 5},
        }
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


def error_body(api, kind, message):
    if api == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "code": None}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the test reads /_log instead
        pass

    def send_json(self, status, obj, extra=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def send_raw(self, status, ctype, data, length=None, close=False):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        if length is not None:
            self.send_header("Content-Length", str(length))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def do_GET(self):
        if self.path == "/_log":
            with LOCK:
                self.send_json(200, LOG)
            return
        self.send_json(404, {"error": "not found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace")
        listener = "main" if self.server.server_address[1] == PORTS["main"] else "other"
        try:
            req = json.loads(body)
        except ValueError:
            req = {}
        msgs = [m for m in req.get("messages", []) if m.get("role") == "user"]
        last = msgs[-1]["content"] if msgs else ""
        m = re.search(r"scenario=(\S+)", last)
        scenario = m.group(1) if m else DEFAULT_SCENARIO
        m = re.search(r"id=(\S+)", last)
        tag = m.group(1) if m else "-"
        with LOCK:
            ATTEMPTS[tag] = ATTEMPTS.get(tag, 0) + 1
            attempt = ATTEMPTS[tag]
            LOG.append({"listener": listener, "method": "POST", "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body, "scenario": scenario, "id": tag,
                        "attempt": attempt, "time": time.time()})
        if self.path.endswith("/v1/messages"):
            api = "anthropic"
        elif self.path.endswith("/chat/completions"):
            api = "openai"
        else:
            self.send_json(404, {"error": {"message": "no such endpoint", "type": "not_found"}})
            return
        system = req.get("system") or "".join(
            m.get("content", "") for m in req.get("messages", [])
            if m.get("role") == "system" and isinstance(m.get("content"), str))
        self.agent = next((a for a in ("planner", "executor", "summarizer")
                           if "Your role: the " + a in system), "other")
        try:
            self.behave(api, scenario, tag, attempt, req.get("model", ""))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up, as the scenario meant it to

    def ok(self, api, model, tag):
        self.send_json(200, reply_body(api, model, "answer for " + tag))

    def behave(self, api, scenario, tag, attempt, model):
        once = scenario.endswith("-once")
        base = scenario[:-5] if once else scenario
        if once and attempt > 1:
            return self.ok(api, model, tag)
        if base == "ok":
            return self.ok(api, model, tag)
        if base == "sleep":
            time.sleep(0.5)
            return self.ok(api, model, tag)
        if base == "429":
            return self.send_json(429, error_body(api, "rate_limit_error", "slow down"),
                                  {"Retry-After": "1"})
        if base == "429date":
            when = email.utils.formatdate(time.time() + 2, usegmt=True)
            return self.send_json(429, error_body(api, "rate_limit_error", "slow down"),
                                  {"Retry-After": when})
        if base == "429long":
            return self.send_json(429, error_body(api, "rate_limit_error", "slow down"),
                                  {"Retry-After": "30"})
        if base == "500":
            return self.send_json(500, error_body(api, "server_error", "internal trouble"))
        if base == "529":
            return self.send_json(529, error_body(api, "overloaded_error", "Overloaded"))
        if base == "400":
            return self.send_json(400, error_body(api, "invalid_request_error",
                                                  "max_tokens: 999999 > 8192, the maximum\n"
                                                  "for this model"))
        if base == "401":
            # Servers do echo what they were given; the client must scrub it.
            given = self.headers.get("x-api-key") or self.headers.get("Authorization") or ""
            return self.send_json(401, error_body(api, "authentication_error",
                                                  "invalid key: " + given))
        if base == "echokey":
            # A normal answer that quotes the credential, as a careless or
            # hostile server might: in the text and in the model's name.
            given = self.headers.get("x-api-key") or self.headers.get("Authorization") or ""
            if self.agent == "planner":
                text = ("The request came with %s.\n\n**PLAN:**\n1. Keep the kernel as it "
                        "is; the header was %s.\n\nTECHNIQUE: Echo %s\n" % (given, given, given))
            elif self.agent == "summarizer":
                text = "INSIGHT: the header was %s, which any kernel can use.\n" % given
            else:
                text = "answer for %s; the header was %s" % (tag, given)
            return self.send_json(200, reply_body(api, model + " for " + given, text))
        if base == "executor400":
            if self.agent == "planner":
                text = "**PLAN:**\n1. Load x and y as float4.\n\nTECHNIQUE: Vec4 Loads\n"
                return self.send_json(200, reply_body(api, model, text))
            return self.send_json(400, error_body(api, "invalid_request_error",
                                                  "the executor is not served here"))
        if base == "redirect":
            target = "http://127.0.0.1:%d%s" % (PORTS["other"], self.path)
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if base == "timeout":
            # Nothing at all until the client gives up.
            for _ in range(100):
                time.sleep(0.1)
            return self.ok(api, model, tag)
        if base == "drip":
            # 8 KB in sixteen pieces, 0.125 s apart (2 s in all): slow, yet
            # well above the test's low-speed limit of 1000 bytes/s for 2 s
            # even on a loaded machine.
            obj = reply_body(api, model, "answer for " + tag)
            obj["padding"] = " " * 8000
            data = json.dumps(obj).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.flush()
            step = (len(data) + 15) // 16
            for i in range(0, len(data), step):
                time.sleep(0.125)
                self.wfile.write(data[i:i + step])
                self.wfile.flush()
            return
        if base == "malformed":
            return self.send_raw(200, "application/json", b'{"choices": [{"message": ',
                                 length=25)
        if base == "truncated":
            data = json.dumps(reply_body(api, model, "answer for " + tag)).encode()
            return self.send_raw(200, "application/json", data[:40], length=len(data),
                                 close=True)
        if base == "html502":
            page = (b"<html><head><title>502 Bad Gateway</title></head>\n<body>"
                    b"<h1>Bad Gateway</h1></body></html>\n")
            return self.send_raw(502, "text/html", page, length=len(page))
        if base == "big":
            size = 3 << 20
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self.wfile.write(b" " * size)
            return
        if base == "bignolen":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.close_connection = True
            self.end_headers()
            chunk = b" " * 65536
            for _ in range(48):  # 3 MiB
                self.wfile.write(chunk)
            return
        self.send_json(400, error_body(api, "invalid_request_error",
                                       "unknown scenario " + scenario))


def main():
    global DEFAULT_SCENARIO
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--scenario":
        DEFAULT_SCENARIO = args[1]
    elif args:
        sys.exit("usage: llm_server.py [--scenario NAME]")
    ThreadingHTTPServer.request_queue_size = 64  # a batch connects all at once
    main_srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    other_srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    main_srv.daemon_threads = other_srv.daemon_threads = True
    PORTS["main"] = main_srv.server_address[1]
    PORTS["other"] = other_srv.server_address[1]
    threading.Thread(target=other_srv.serve_forever, daemon=True).start()
    print("PORTS %d %d" % (PORTS["main"], PORTS["other"]), flush=True)
    try:
        main_srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
