-- wrk script: POST objects with unique names (one namespace per run, given in WRK_NS). WRK_RESOURCE is the
-- namespaced resource (default endpoints), WRK_PREFIX its group-version's path (default /api/v1; a custom
-- resource's /apis/<group>/<version>) and WRK_SPEC extra top-level JSON fields (e.g. a Service's spec).
local counter = 0
local thread_id = 0
local ns = os.getenv("WRK_NS") or "default"
local resource = os.getenv("WRK_RESOURCE") or "endpoints"
local extra = os.getenv("WRK_SPEC") or ""
local prefix = os.getenv("WRK_PREFIX") or "/api/v1"
if extra ~= "" then extra = "," .. extra end

function setup(thread)
  thread_id = thread_id + 1
  thread:set("tid", thread_id)
end

function request()
  counter = counter + 1
  local body = '{"metadata":{"name":"e' .. tid .. '-' .. counter .. '"}' .. extra .. '}'
  local headers = {["Content-Type"] = "application/json"}
  for name, value in pairs(wrk.headers) do headers[name] = value end  -- keeps -H Authorization
  return wrk.format("POST", prefix .. "/namespaces/" .. ns .. "/" .. resource, headers, body)
end
