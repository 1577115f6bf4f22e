/**
 * The Redis Function that admits one request (README, Several instances), loaded with
 * FUNCTION LOAD REPLACE. One FCALL reads the time on the Redis server,
 * checks the subnet, frequency and daily limits in the order of the README's Errors,
 * and changes the state only when all three pass.
 *
 * Keys (one hash tag per access key, so that a Redis Cluster keeps them in
 * one slot):
 *   KEYS[1]  the accepted requests' times in ms, newest first, at most per_window (a list)
 *   KEYS[2]  the service day and its count (a hash: d, n)
 *   KEYS[3]  the subnets seen that day (a set)
 * Arguments: per_window, window_ms, daily, subnets (-1 for no limit), the client's subnet.
 * Reply: {verdict, retry_ms, used, newest_age_ms, count, ms_to_midnight}
 *   verdict 0 accepted, 1 subnet, 2 frequency, 3 daily; used = accepted in
 *   the window and count = today's, both after an acceptance; newest_age_ms
 *   -1 when the window is empty.
 * Every key expires by itself: the window after its length, the day's after
 * the day.
 */
export const FUNCTION_NAME = 'proxylist_admit_v1';

export const LIBRARY = `#!lua name=proxylist_v1
local DAY_MS = 86400000
local OFFSET_MS = 7200000

local function admit(keys, args)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local per_window = tonumber(args[1])
  local window_ms = tonumber(args[2])
  local daily = tonumber(args[3])
  local subnets = tonumber(args[4])
  local subnet = args[5]
  local day = math.floor((now + OFFSET_MS) / DAY_MS)
  local to_midnight = (day + 1) * DAY_MS - OFFSET_MS - now

  local state = redis.call('HMGET', keys[2], 'd', 'n')
  local same_day = tonumber(state[1]) == day
  local count = 0
  if same_day then count = tonumber(state[2]) or 0 end

  local new_subnet = false
  if subnets >= 0 then
    local seen = 0
    if same_day then
      new_subnet = redis.call('SISMEMBER', keys[3], subnet) == 0
      if new_subnet then seen = redis.call('SCARD', keys[3]) end
    else
      new_subnet = true
    end
    if new_subnet and seen >= subnets then return {1, to_midnight, 0, -1, count, to_midnight} end
  end

  local used = 0
  local newest_age = -1
  local stamps = {}
  if per_window >= 0 then
    stamps = redis.call('LRANGE', keys[1], 0, per_window - 1)
    for i = 1, #stamps do
      local age = now - tonumber(stamps[i])
      if age < window_ms then used = used + 1 end
      if i == 1 then newest_age = age end
    end
    if #stamps >= per_window then
      local oldest_age = now - tonumber(stamps[per_window])
      if oldest_age < window_ms then return {2, window_ms - oldest_age, used, newest_age, count, to_midnight} end
    end
  end

  if daily >= 0 and count >= daily then return {3, to_midnight, used, newest_age, count, to_midnight} end

  -- The day's hash gets its expiry when the day begins; a count only grows within the day.
  if same_day then
    count = redis.call('HINCRBY', keys[2], 'n', 1)
  else
    redis.call('DEL', keys[3])
    redis.call('HSET', keys[2], 'd', day, 'n', 1)
    redis.call('PEXPIRE', keys[2], to_midnight + 60000)
    count = 1
  end
  if per_window >= 0 then
    redis.call('LPUSH', keys[1], now)
    -- LRANGE read at most per_window stamps: fewer means the list is still short of them.
    if #stamps >= per_window then redis.call('LTRIM', keys[1], 0, per_window - 1) end
    redis.call('PEXPIRE', keys[1], window_ms + 1000)
    used = used + 1
    newest_age = 0
  end
  if new_subnet then
    redis.call('SADD', keys[3], subnet)
    redis.call('PEXPIRE', keys[3], to_midnight + 60000)
  end
  return {0, 0, used, newest_age, count, to_midnight}
end

redis.register_function('${FUNCTION_NAME}', admit)
`;

/** The keys of one access key (its hex SHA-256 id): one hash tag, so one Redis Cluster slot. */
export const keysOf = (id: string): string[] => {
  const tag = `{pl:${id.slice(0, 32)}}`;
  return [`${tag}:w`, `${tag}:d`, `${tag}:s`];
};
