-- wrk script: POST Endpoints objects with unique names (one namespace per run, given in WRK_NS).
local counter = 0
local thread_id = 0
local ns = os.getenv("WRK_NS") or "default"

function setup(thread)
  thread_id = thread_id + 1
  thread:set("tid", thread_id)
end

function request()
  counter = counter + 1
  local body = '{"metadata":{"name":"e' .. tid .. '-' .. counter .. '"}}'
  local headers = {["Content-Type"] = "application/json"}
  for name, value in pairs(wrk.headers) do headers[name] = value end  -- keeps -H Authorization
  return wrk.format("POST", "/api/v1/namespaces/" .. ns .. "/endpoints", headers, body)
end
