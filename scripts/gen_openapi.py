"""Writes func-api's OpenAPI 3 document (overlord/src/api/openapi.json, built
into the binary): python3 scripts/gen_openapi.py > overlord/src/api/openapi.json"""
import json
err = {"description": "error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
def resp(code, desc, schema=None):
    r = {"description": desc}
    if schema: r["content"] = {"application/json": {"schema": schema}}
    return {str(code): r}
def errors(*codes):
    out = {}
    for c in codes: out[str(c)] = err
    return out
idp = {"name": "id", "in": "path", "required": True, "schema": {"type": "string", "minLength": 1, "maxLength": 1000}, "description": "a job id (also `last` for jobs)"}
obj = {"type": "object"}
doc = {
 "openapi": "3.0.3",
 "info": {"title": "func-api", "version": "1", "description": "Func in Rust: the overlord's REST API and live events (DESIGN §14). Every endpoint but login/logout and this document needs `Authorization: Bearer TOKEN`, the session cookie, or the overlord's client certificate."},
 "servers": [{"url": "/"}],
 "security": [{"bearer": []}, {"cookie": []}],
 "components": {
  "securitySchemes": {
   "bearer": {"type": "http", "scheme": "bearer"},
   "cookie": {"type": "apiKey", "in": "cookie", "name": "func_session"}},
  "schemas": {
   "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
   "Minion": {"type": "object", "required": ["name", "address", "last_seen"], "properties": {"name": {"type": "string"}, "address": {"type": "string"}, "last_seen": {"type": "number", "nullable": True, "description": "when it last answered func-api (epoch seconds)"}}},
   "Call": {"type": "object", "additionalProperties": False, "required": ["spec", "module", "method"], "properties": {
      "spec": {"type": "string", "description": "Func's SPEC: globs separated by ';', @group"},
      "module": {"type": "string"}, "method": {"type": "string"},
      "args": {"type": "array", "items": {}},
      "async": {"type": "boolean", "default": False},
      "batch": {"oneOf": [{"type": "integer", "minimum": 1}, {"type": "string", "description": "N or N%"}], "nullable": True},
      "batch_wait": {"type": "number", "minimum": 0},
      "failhard": {"type": "boolean"},
      "timeout": {"type": "number", "exclusiveMinimum": True, "minimum": 0, "description": "seconds per host"},
      "exclude": {"type": "string"}}},
   "JobId": {"type": "object", "required": ["job_id"], "properties": {"job_id": {"type": "string"}}},
   "JobStatus": {"type": "object", "required": ["job_id", "status", "state", "function", "results", "waiting"], "properties": {
      "job_id": {"type": "string"}, "status": {"type": "integer", "description": "Func's code: 0 running, 1 finished, 2 lost in space, 3 partial"},
      "state": {"type": "string"}, "function": {"type": "string"}, "results": obj, "waiting": obj}},
   "JobRow": {"type": "object", "properties": {"id": {"type": "string"}, "function": {"type": "string"}, "target": {"type": "string"}, "user": {"type": "string"}, "started": {"type": "number"}, "ended": {"type": "number", "nullable": True}, "hosts": {"type": "integer"}, "batch": {"type": "boolean"}, "finished": {"type": "boolean"}}},
   "BatchStatus": {"type": "object", "required": ["job_id", "state", "counts", "hosts"], "properties": {"job_id": {"type": "string"}, "function": {"type": "string", "nullable": True}, "size": {"type": "integer", "nullable": True}, "mode": {"type": "string", "nullable": True}, "state": {"type": "string"}, "halted": {"type": "string", "nullable": True}, "complete": {"type": "boolean"}, "interrupted": {"type": "boolean"}, "driver_alive": {"type": "boolean"}, "driver_pid": {"type": "integer", "nullable": True}, "counts": obj, "hosts": obj}}
  }},
 "paths": {
  "/api/v1/login": {"post": {"summary": "A session cookie for a token (browsers)", "security": [],
     "description": "Needs the X-Func-CSRF header or this service's own Origin (no login CSRF); the body (at most 4 KiB) must arrive within 5 s.",
     "parameters": [{"name": "X-Func-CSRF", "in": "header", "required": False, "schema": {"type": "string"}}],
     "requestBody": {"required": True, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": False, "required": ["token"], "properties": {"token": {"type": "string"}}}}}},
     "responses": {**resp(200, "logged in; Set-Cookie: func_session (HttpOnly, Secure, SameSite=Strict)", obj), **errors(400, 401, 403, 408, 413, 429, 503)}}},
  "/api/v1/logout": {"post": {"summary": "Ends the session", "security": [], "responses": resp(200, "logged out", obj)}},
  "/api/v1/minions": {"get": {"summary": "Signed minions a SPEC names (natural order)",
     "parameters": [{"name": "spec", "in": "query", "schema": {"type": "string"}}],
     "responses": {**resp(200, "minions", {"type": "object", "required": ["minions"], "properties": {"minions": {"type": "array", "items": {"$ref": "#/components/schemas/Minion"}}}}), **errors(400, 401)}}},
  "/api/v1/minions/{name}/methods": {"get": {"summary": "A minion's modules, methods and arguments (get_method_args)",
     "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
     "responses": {**resp(200, "modules", {"type": "object", "properties": {"minion": {"type": "string"}, "modules": obj}}), **errors(401, 403, 404, 502)}}},
  "/api/v1/calls": {"post": {"summary": "Runs a method: synchronously (200), async or as a batch (202)",
     "requestBody": {"required": True, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Call"}}}},
     "responses": {**resp(200, "{host: result}: the document of func --json", obj), **resp(202, "started", {"$ref": "#/components/schemas/JobId"}), **errors(400, 401, 403, 404, 413, 429, 503)}}},
  "/api/v1/jobs": {"get": {"summary": "Jobs, newest first, a page at a time",
     "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}},
                    {"name": "before", "in": "query", "schema": {"type": "string"}, "description": "the `next` of the previous page"},
                    {"name": "function", "in": "query", "schema": {"type": "string"}, "description": "glob over module.method"},
                    {"name": "target", "in": "query", "schema": {"type": "string"}, "description": "glob over the SPEC"}],
     "responses": {**resp(200, "a page", {"type": "object", "required": ["jobs", "next"], "properties": {"jobs": {"type": "array", "items": {"$ref": "#/components/schemas/JobRow"}}, "next": {"type": "string", "nullable": True}}}), **errors(400, 401, 503)}}},
  "/api/v1/jobs/{id}": {"get": {"summary": "A job's status (job_status --json)", "parameters": [idp],
     "responses": {**resp(200, "status", {"$ref": "#/components/schemas/JobStatus"}), **errors(401, 404, 503)}}},
  "/api/v1/jobs/{id}/kill": {"post": {"summary": "Signals the hosts still running the job", "parameters": [idp],
     "requestBody": {"required": False, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": False, "properties": {"signal": {"type": "string", "default": "KILL"}}}}}},
     "responses": {**resp(200, "signalled", {"type": "object", "properties": {"job_id": {"type": "string"}, "signalled": obj}}), **errors(400, 401, 404, 413, 503)}}},
  "/api/v1/batches/{id}": {"get": {"summary": "A batch's status (batch status --json)", "parameters": [idp],
     "responses": {**resp(200, "status", {"$ref": "#/components/schemas/BatchStatus"}), **errors(401, 404, 503)}}},
  "/api/v1/batches/{id}/stop": {"post": {"summary": "Drains a batch (kill: also kills in-flight hosts)", "parameters": [idp],
     "requestBody": {"required": False, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": False, "properties": {"kill": {"type": "boolean"}}}}}},
     "responses": {**resp(200, "requested", obj), **errors(400, 401, 404, 413, 503)}}},
  "/api/v1/batches/{id}/recover": {"post": {"summary": "Resumes a batch whose driver died", "parameters": [idp],
     "responses": {**resp(200, "outcome", obj), **errors(401, 404, 503)}}},
  "/api/v1/events": {"get": {"summary": "Server-Sent Events: job/<id>/new|ret/<host>|complete, batch/<id>/new|progress|complete|halted|recover",
     "description": "Each event: `id:` and `data: {\"tag\": TAG, \"data\": PAYLOAD}` (no `event:` line).",
     "parameters": [{"name": "Last-Event-ID", "in": "header", "schema": {"type": "string"}},
                    {"name": "tag", "in": "query", "schema": {"type": "string", "maxLength": 1000}, "description": "only tags starting with this prefix"}],
     "responses": {"200": {"description": "an event stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}}, **errors(401)}}},
  "/api/v1/openapi.json": {"get": {"summary": "This document", "security": [], "responses": resp(200, "OpenAPI 3", obj)}},
  "/metrics": {"get": {"summary": "Counters in Prometheus' text format (administrators)",
     "responses": {"200": {"description": "metrics", "content": {"text/plain": {"schema": {"type": "string"}}}}, **errors(401, 403)}}}
 }}
# Every operation: an operationId (generated clients get readable names)
# and a tag; 202 answers say where to follow the job; pages link the next.
names = {
 ("post", "/api/v1/login"): ("login", "session"), ("post", "/api/v1/logout"): ("logout", "session"),
 ("get", "/api/v1/minions"): ("listMinions", "minions"), ("get", "/api/v1/minions/{name}/methods"): ("getMinionMethods", "minions"),
 ("post", "/api/v1/calls"): ("runCall", "calls"), ("get", "/api/v1/jobs"): ("listJobs", "jobs"),
 ("get", "/api/v1/jobs/{id}"): ("getJob", "jobs"), ("post", "/api/v1/jobs/{id}/kill"): ("killJob", "jobs"),
 ("get", "/api/v1/batches/{id}"): ("getBatch", "batches"), ("post", "/api/v1/batches/{id}/stop"): ("stopBatch", "batches"),
 ("post", "/api/v1/batches/{id}/recover"): ("recoverBatch", "batches"), ("get", "/api/v1/events"): ("streamEvents", "events"),
 ("get", "/api/v1/openapi.json"): ("getOpenApi", "meta"), ("get", "/metrics"): ("getMetrics", "meta"),
}
for path, ops in doc["paths"].items():
    for method, op in ops.items():
        op["operationId"], tag = names[(method, path)]
        op["tags"] = [tag]
        op["responses"].update(errors(400) if path.startswith("/api/v1/") and "400" not in op["responses"] else {})
doc["paths"]["/api/v1/calls"]["post"]["responses"]["202"]["headers"] = {
 "Location": {"description": "the job (or batch) to follow", "schema": {"type": "string"}}}
doc["paths"]["/api/v1/calls"]["post"]["responses"].update(errors(408, 415))
doc["paths"]["/api/v1/jobs"]["get"]["responses"]["200"]["headers"] = {
 "Link": {"description": "<…>; rel=\"next\" when there is a next page", "schema": {"type": "string"}}}
doc["tags"] = [{"name": t} for t in ("session", "minions", "calls", "jobs", "batches", "events", "meta")]
print(json.dumps(doc, indent=1))
