-- Rotates through the request paths listed one per line in the file named by
-- the PATHS environment variable (each thread from its own offset), and ends
-- with one JSON line of results, p99.9 included.
local paths = {}
for line in io.lines(os.getenv("PATHS")) do paths[#paths + 1] = line end
local counter = 0
local offset = 0
-- With DELAY_MS set, each connection waits that long between requests: a
-- fixed offered rate of connections * 1000 / DELAY_MS requests per second.
local pause = tonumber(os.getenv("DELAY_MS") or "")
if pause then
  function delay()
    return pause
  end
end
function setup(thread)
  thread:set("offset", offset)
  offset = offset + 7
end
-- With CROWD_KEYS=N set, the key of each request is the next of N keys
-- (crowd0000000 on, from CROWD_FROM), put where a path says KEYHERE; with
-- BUSTER set, each request ends with a cache-buster of its own (&_=N).
local crowd = tonumber(os.getenv("CROWD_KEYS") or "")
local crowdFrom = tonumber(os.getenv("CROWD_FROM") or "0")
local buster = os.getenv("BUSTER")
function request()
  counter = counter + 1
  local path = paths[((counter + offset) % #paths) + 1]
  if crowd then path = string.gsub(path, "KEYHERE", string.format("crowd%07d", (crowdFrom + counter) % crowd)) end
  if buster then path = path .. "&_=" .. (1700000000 + counter) end
  return wrk.format("GET", path)
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d,"errors_connect":%d,"errors_read":%d,"errors_write":%d,"errors_status":%d,"errors_timeout":%d}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9), latency.max,
    e.connect, e.read, e.write, e.status, e.timeout))
end
