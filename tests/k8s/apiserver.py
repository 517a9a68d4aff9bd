#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small, honest stand-in for kube-apiserver, for gpushare's Kubernetes tests.

It stores Nodes, Pods, ResourceSlices, ResourceClaims and DeviceClasses (resource.k8s.io/v1) as
JSON exactly as clients send them, with what the real server adds: metadata.uid,
resourceVersion (one counter for all objects), creationTimestamp, generation. It serves:

  GET    list (limit + continue, fieldSelector with =, == and != on dotted paths) and one object
  GET    ?watch=true from a resourceVersion: ADDED / MODIFIED / DELETED lines (an object that
         leaves the field selector is DELETED, one that enters it ADDED), BOOKMARK with
         allowWatchBookmarks, ERROR 410 Gone for a resourceVersion older than it remembers;
         ends after timeoutSeconds
  POST   create (generateName too; the status of Nodes, Pods and ResourceClaims is dropped, as
         the real server does), 409 when the name exists
  PUT    replace (409 on a stale metadata.resourceVersion); .../status replaces only the status
         of Pods and ResourceClaims, whose main PUT keeps it
  PATCH  application/merge-patch+json (on the object or its status)
  DELETE

Authentication: "Authorization: Bearer TOKEN"; --token may do everything, --read-token only GET
(403 otherwise); anything else is 401. Errors are v1 Status objects.

Failure switch (tests): POST /_standin/mode with {"mode": M} (no token; loopback only):
"ok", "error" (500 to every API request), "forbidden" (403), "hang" (accept, never answer),
"close" (close the connection without answering). Being down is being stopped: kill the PID.

  apiserver.py --port 0 --port-file F --token T [--read-token R] [--load objects.json]
               [--tls-cert CERT.pem --tls-key KEY.pem] [--history N]
               [--feature-gates DRAPartitionableDevices=false,DRAConsumableCapacity=false]

Feature gates off: as kube-apiserver without them, ResourceSlices are stored without the fields
they guard (sharedCounters and consumesCounters; allowMultipleAllocations and requestPolicy).

writes the port it listens on to F (atomically) once it serves. Objects of --load are stored as
given, status included (the state of a running cluster). Python 3 standard library only.
Not a real API server: no admission, defaulting, validation beyond names and kinds, labels or
RBAC; one process, state in memory.
"""

import argparse
import copy
import datetime
import json
import os
import random
import ssl
import string
import sys
import threading

# Objects as deep as a test writes them (a hostile claim's GpuConfig nests thousands of levels;
# copying and encoding them recurses once a level or more): the limits of the real server (its
# decoder's 10,000 levels), not Python's default of 1,000 frames.
sys.setrecursionlimit(40000)
threading.stack_size(256 << 20)
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

# resource name -> (group/version prefix, kind, namespaced, has a status subresource)
RESOURCES = {
    "nodes": ("/api/v1", "Node", False, True),
    "pods": ("/api/v1", "Pod", True, True),
    "resourceslices": ("/apis/resource.k8s.io/v1", "ResourceSlice", False, False),
    "resourceclaims": ("/apis/resource.k8s.io/v1", "ResourceClaim", True, True),
    "deviceclasses": ("/apis/resource.k8s.io/v1", "DeviceClass", False, False),
}
EVENTS_KEPT = 100000  # events remembered (--history); older resourceVersions get 410 Gone


class Store:
    """Objects and the event log, under one lock."""

    def __init__(self):
        self.lock = threading.Condition()
        self.objects = {}  # (resource, namespace, name) -> object
        self.rv = 0
        self.events = []  # (rv, resource, type, object)
        self.kept = EVENTS_KEPT
        self.mode = "ok"

    def _bump(self, resource, etype, obj, old=None):
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.events.append((self.rv, resource, etype, copy.deepcopy(obj), old))
        if len(self.events) > self.kept:
            del self.events[: len(self.events) - self.kept]
        self.lock.notify_all()

    def oldest(self):
        return self.events[0][0] if self.events else self.rv + 1


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


def field(obj, path):
    for key in path.split("."):
        if not isinstance(obj, dict):
            return ""
        obj = obj.get(key)
    return "" if obj is None else str(obj)


def selected(obj, selector):
    for term in filter(None, (selector or "").split(",")):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if field(obj, key) == value:
                return False
        else:
            key, value = term.replace("==", "=").split("=", 1)
            if field(obj, key) != value:
                return False
    return True


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    target = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = merge_patch(target.get(key), value)
    return target


def route(path):
    """(resource, namespace, name, subresource) of an API path, or None."""
    for resource, (prefix, _, namespaced, _) in RESOURCES.items():
        if not path.startswith(prefix + "/"):
            continue
        rest = path[len(prefix) + 1:].split("/")
        namespace = None
        if namespaced and len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not rest or rest[0] != resource or len(rest) > 3:
            continue
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub not in (None, "status"):
            return None
        return resource, namespace, name, sub
    return None


def drop_gated(obj, gates):
    """Drops what a ResourceSlice may hold only with feature gates that are off."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    devices = [d for d in spec.get("devices") or [] if isinstance(d, dict)]
    if not gates.get("DRAPartitionableDevices", True):
        spec.pop("sharedCounters", None)
        for d in devices:
            d.pop("consumesCounters", None)
    if not gates.get("DRAConsumableCapacity", True):
        for d in devices:
            d.pop("allowMultipleAllocations", None)
            for cap in (d.get("capacity") or {}).values():
                if isinstance(cap, dict):
                    cap.pop("requestPolicy", None)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are two writes: with Nagle's algorithm, the body of an answer on a kept
    # connection waits for the client's delayed ACK (40 ms), which no real API server adds.
    disable_nagle_algorithm = True
    store = None
    tokens = {}
    gates = {}

    def log_message(self, fmt, *args):  # quiet: tests read their own logs
        if os.environ.get("APISERVER_VERBOSE"):
            sys.stderr.write("apiserver: " + (fmt % args) + "\n")

    def send_json(self, code, obj):
        body = (json.dumps(obj) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def fail(self, code, reason, message):
        self.send_json(code, status(code, reason, message))

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n > 0 else b""
        try:
            self._body = json.loads(raw) if raw else None
        except ValueError:
            self._body = None

    def body(self):
        return self._body

    def gate(self, write):
        """Failure modes and authentication; True when the request may proceed."""
        mode = self.store.mode
        if mode == "hang":
            time.sleep(3600)
        if mode == "close":
            self.close_connection = True
            self.connection.close()
            return False
        if mode == "error":
            self.fail(500, "InternalError", "stand-in switched to answer errors")
            return False
        auth = self.headers.get("Authorization", "")
        role = self.tokens.get(auth[len("Bearer "):]) if auth.startswith("Bearer ") else None
        if role is None:
            self.fail(401, "Unauthorized", "Unauthorized")
            return False
        if mode == "forbidden" or (write and role != "write"):
            self.fail(403, "Forbidden", "forbidden: the token may not do this")
            return False
        return True

    def handle_api(self, method):
        self.read_body()  # always, so that a refused request leaves the connection usable
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if url.path == "/_standin/mode" and method == "POST":
            req = self.body() or {}
            self.store.mode = req.get("mode", "ok")
            return self.send_json(200, {"mode": self.store.mode})
        where = route(url.path)
        if where is None:
            return self.fail(404, "NotFound", "the server could not find the requested resource")
        if not self.gate(method != "GET"):
            return None
        resource, namespace, name, sub = where
        if method == "GET" and name is None:
            if query.get("watch") in ("true", "1"):
                return self.watch(resource, namespace, query)
            return self.list(resource, namespace, query)
        handler = {"GET": self.get_one, "POST": self.create, "PUT": self.replace,
                   "PATCH": self.patch, "DELETE": self.delete}.get(method)
        if handler is None or (method == "POST") != (name is None):
            return self.fail(405, "MethodNotAllowed", "method not allowed here")
        return handler(resource, namespace, name, sub)

    def do_GET(self):
        self.handle_api("GET")

    def do_POST(self):
        self.handle_api("POST")

    def do_PUT(self):
        self.handle_api("PUT")

    def do_PATCH(self):
        self.handle_api("PATCH")

    def do_DELETE(self):
        self.handle_api("DELETE")

    # ---- reading ----

    def kind_list(self, resource):
        prefix, kind, _, _ = RESOURCES[resource]
        return prefix[len("/apis/"):] if prefix.startswith("/apis/") else "v1", kind + "List"

    def list(self, resource, namespace, query):
        with self.store.lock:
            items = [copy.deepcopy(o) for (r, ns, _), o in sorted(self.store.objects.items())
                     if r == resource and (namespace is None or ns == namespace)
                     and selected(o, query.get("fieldSelector"))]
            rv = str(self.store.rv)
        start = 0
        if query.get("continue"):
            try:
                token = json.loads(query["continue"])
                start, rv = int(token["start"]), token["rv"]
            except (ValueError, KeyError, TypeError):
                return self.fail(400, "BadRequest", "malformed continue token")
        limit = int(query.get("limit") or 0)
        page = items[start:start + limit] if limit > 0 else items[start:]
        meta = {"resourceVersion": rv}
        if limit > 0 and start + limit < len(items):
            meta["continue"] = json.dumps({"start": start + limit, "rv": rv})
        api, kind = self.kind_list(resource)
        return self.send_json(200, {"apiVersion": api, "kind": kind, "metadata": meta,
                                    "items": page})

    def get_one(self, resource, namespace, name, sub):
        with self.store.lock:
            obj = self.store.objects.get((resource, namespace, name))
            obj = copy.deepcopy(obj)
        if obj is None:
            return self.fail(404, "NotFound", '%s "%s" not found' % (resource, name))
        return self.send_json(200, obj)

    def watch(self, resource, namespace, query):
        try:
            since = int(query.get("resourceVersion") or 0)
        except ValueError:
            return self.fail(400, "BadRequest", "malformed resourceVersion")
        deadline = time.time() + float(query.get("timeoutSeconds") or 300)
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            self.stream(resource, namespace, query, since, deadline, bookmarks)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def chunk(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def stream(self, resource, namespace, query, since, deadline, bookmarks):
        with self.store.lock:
            if since and since < self.store.oldest() - 1:
                gone = status(410, "Expired", "too old resource version: %d (%d)"
                              % (since, self.store.oldest() - 1))
                self.chunk({"type": "ERROR", "object": gone})
                return
            initial = []
            if not since:  # resourceVersion unset or 0: the current objects first, as ADDED
                initial = [copy.deepcopy(o) for (r, ns, _), o in sorted(self.store.objects.items())
                           if r == resource and (namespace is None or ns == namespace)
                           and selected(o, query.get("fieldSelector"))]
                since = self.store.rv
        for obj in initial:
            self.chunk({"type": "ADDED", "object": obj})
        while time.time() < deadline:
            with self.store.lock:
                news = [e for e in self.store.events if e[0] > since]
                if not news:
                    self.store.lock.wait(timeout=min(1.0, max(0.0, deadline - time.time())))
                    news = [e for e in self.store.events if e[0] > since]
            for rv, r, etype, obj, old in news:
                since = rv
                ns = obj["metadata"].get("namespace")
                if r != resource or (namespace is not None and ns != namespace):
                    continue
                # As the real server: an object that leaves the field selector is DELETED for
                # this watch, one that enters it ADDED.
                now = selected(obj, query.get("fieldSelector"))
                before = old is not None and selected(old, query.get("fieldSelector"))
                if etype == "MODIFIED" and now != before:
                    etype = "ADDED" if now else "DELETED"
                if now or (etype == "DELETED" and before):
                    self.chunk({"type": etype, "object": obj})
            if news and bookmarks:
                api, kind = self.kind_list(resource)
                self.chunk({"type": "BOOKMARK", "object": {
                    "apiVersion": api, "kind": kind[:-4],
                    "metadata": {"resourceVersion": str(since)}}})

    # ---- writing ----

    def checked(self, resource, namespace, obj):
        """The object to store, or None after answering an error."""
        prefix, kind, namespaced, _ = RESOURCES[resource]
        api = prefix[len("/apis/"):] if prefix.startswith("/apis/") else "v1"
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata", {}), dict):
            self.fail(400, "BadRequest", "the body is not a JSON object")
            return None
        if obj.get("kind", kind) != kind or obj.get("apiVersion", api) != api:
            self.fail(400, "BadRequest", "%s/%s is not %s/%s" % (obj.get("apiVersion"),
                                                               obj.get("kind"), api, kind))
            return None
        obj = copy.deepcopy(obj)
        obj["apiVersion"], obj["kind"] = api, kind
        if resource == "resourceslices":
            drop_gated(obj, self.gates)
        meta = obj.setdefault("metadata", {})
        if namespaced:
            if meta.get("namespace", namespace) != namespace:
                self.fail(400, "BadRequest", "the namespace of the object does not match")
                return None
            meta["namespace"] = namespace
        return obj

    def create(self, resource, namespace, name, sub):
        obj = self.checked(resource, namespace, self.body())
        if obj is None:
            return None
        if RESOURCES[resource][2] and namespace is None:
            return self.fail(405, "MethodNotAllowed", "create in a namespace")
        meta = obj["metadata"]
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(
                random.choice(string.ascii_lowercase + string.digits) for _ in range(5))
        if not meta.get("name"):
            return self.fail(422, "Invalid", "metadata.name: Required value")
        if RESOURCES[resource][3]:
            obj.pop("status", None)  # as the real server: status is written through /status
        key = (resource, namespace, meta["name"])
        with self.store.lock:
            if key in self.store.objects:
                return self.fail(409, "AlreadyExists",
                                 '%s "%s" already exists' % (resource, meta["name"]))
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%SZ")
            meta["generation"] = 1
            self.store.objects[key] = obj
            self.store._bump(resource, "ADDED", obj)
            obj = copy.deepcopy(obj)
        return self.send_json(201, obj)

    def update(self, resource, namespace, name, sub, new):
        """Stores new in place of the object (status subresource rules); answers."""
        key = (resource, namespace, name)
        with self.store.lock:
            old = self.store.objects.get(key)
            if old is None:
                return self.fail(404, "NotFound", '%s "%s" not found' % (resource, name))
            rv = new["metadata"].get("resourceVersion")
            if rv and rv != old["metadata"]["resourceVersion"]:
                return self.fail(409, "Conflict", "the object has been modified; please apply "
                                 "your changes to the latest version and try again")
            if new["metadata"].get("name", name) != name:
                return self.fail(400, "BadRequest", "the name of the object does not match")
            if sub == "status":
                stored = copy.deepcopy(old)
                stored["status"] = new.get("status")
            else:
                stored = new
                for k in ("uid", "creationTimestamp", "generation"):
                    stored["metadata"][k] = old["metadata"].get(k)
                stored["metadata"]["name"] = name
                if RESOURCES[resource][3]:
                    stored["status"] = old.get("status")
                if stored.get("spec") != old.get("spec"):
                    stored["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
            if stored.get("status") is None:
                stored.pop("status", None)
            self.store.objects[key] = stored
            self.store._bump(resource, "MODIFIED", stored, copy.deepcopy(old))
            stored = copy.deepcopy(stored)
        return self.send_json(200, stored)

    def replace(self, resource, namespace, name, sub):
        new = self.checked(resource, namespace, self.body())
        return None if new is None else self.update(resource, namespace, name, sub, new)

    def patch(self, resource, namespace, name, sub):
        ctype = self.headers.get("Content-Type", "")
        if not ctype.startswith("application/merge-patch+json"):
            return self.fail(415, "UnsupportedMediaType", "only application/merge-patch+json")
        with self.store.lock:
            old = copy.deepcopy(self.store.objects.get((resource, namespace, name)))
        if old is None:
            return self.fail(404, "NotFound", '%s "%s" not found' % (resource, name))
        new = self.checked(resource, namespace, merge_patch(old, self.body()))
        return None if new is None else self.update(resource, namespace, name, sub, new)

    def delete(self, resource, namespace, name, sub):
        key = (resource, namespace, name)
        with self.store.lock:
            obj = self.store.objects.pop(key, None)
            if obj is not None:
                self.store._bump(resource, "DELETED", obj)
                obj = copy.deepcopy(obj)
        if obj is None:
            return self.fail(404, "NotFound", '%s "%s" not found' % (resource, name))
        return self.send_json(200, obj)


def load(store, path):
    """Creates the objects of a JSON file (an array, or a List with items) at start."""
    with open(path) as f:
        data = json.load(f)
    items = data.get("items", []) if isinstance(data, dict) else data
    by_kind = {v[1]: k for k, v in RESOURCES.items()}
    for obj in items:
        resource = by_kind[obj["kind"]]
        meta = obj.setdefault("metadata", {})
        namespace = meta.get("namespace", "default") if RESOURCES[resource][2] else None
        if namespace is not None:
            meta["namespace"] = namespace
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("generation", 1)
        with store.lock:
            store.objects[(resource, namespace, meta["name"])] = obj
            store._bump(resource, "ADDED", obj)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--address", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--token", required=True, help="a token that may read and write")
    ap.add_argument("--read-token", help="a token that may only read")
    ap.add_argument("--load", help="JSON objects to create at start")
    ap.add_argument("--history", type=int, default=EVENTS_KEPT, help="events remembered")
    ap.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM)")
    ap.add_argument("--tls-key", help="the certificate's key (PEM)")
    ap.add_argument("--feature-gates", default="",
                    help="GATE=false,...: DRAPartitionableDevices, DRAConsumableCapacity")
    args = ap.parse_args()
    store = Store()
    store.kept = max(1, args.history)
    if args.load:
        load(store, args.load)
    Handler.store = store
    Handler.tokens = {args.token: "write"}
    Handler.gates = {k: v.lower() == "true" for k, v in
                     (g.split("=", 1) for g in args.feature_gates.split(",") if "=" in g)}
    if args.read_token:
        Handler.tokens[args.read_token] = "read"
    server = ThreadingHTTPServer((args.address, args.port), Handler)
    server.daemon_threads = True
    if args.tls_cert:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(tmp, args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
