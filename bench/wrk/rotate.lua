-- Rotates through the request paths listed, one per line, in the file named by
-- the PATHS environment variable; each thread starts at its own offset.
local paths = {}
for line in io.lines(os.getenv("PATHS")) do paths[#paths + 1] = line end
local counter = 0
local offset = 0
function setup(thread)
  thread:set("offset", offset)
  offset = offset + 7
end
function request()
  counter = counter + 1
  return wrk.format("GET", paths[((counter + offset) % #paths) + 1])
end
