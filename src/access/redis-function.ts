/**
 * The Redis Functions of the limiter (docs/several-instances.md), loaded
 * with FUNCTION LOAD REPLACE.
 *
 * `admit`: one FCALL reads the time on the Redis server, checks the subnet,
 * frequency and daily limits in the order of the errors of docs/api.md, and
 * changes the state only when all three pass, and only before the
 * instance's deadline: a command that Redis runs after the instance gave up
 * waiting for it (and answered 503) must not count.
 *
 * Keys (one hash tag per access key, so that a Redis Cluster keeps them in
 * one slot):
 *   KEYS[1]  the accepted requests' times in ms, newest first, at most per_window (a list)
 *   KEYS[2]  the service day and its count (a hash: d, n)
 *   KEYS[3]  the subnets seen that day, each with its accepted requests (a hash)
 * Arguments: per_window, window_ms, daily, subnets (-1 for no limit), the
 *   client's subnet, and the deadline in ms of Redis's clock (-1 for none).
 * Reply: {verdict, retry_ms, used, newest_age_ms, count, ms_to_midnight, now_ms}
 *   verdict 0 accepted, 1 subnet, 2 frequency, 3 daily, 4 past the
 *   deadline (nothing changed); used = accepted in the window and count =
 *   today's, both after an acceptance; newest_age_ms -1 when the window is
 *   empty; now_ms the time it was decided at, which is also the time an
 *   accepted request is recorded with.
 *
 * `undo`: takes back an accepted request whose answer reached the instance
 * too late (after a 503 was sent): its time in the window, its count in the
 * day, and its count in the subnet (the subnet goes once none is left).
 * Arguments: now_ms of the acceptance, the subnet ('' when not counted).
 *
 * `usage` (read only): the day's count and subnets of one access key, 0
 * and 0 when its day is not Redis's today. Keys: KEYS[2] and KEYS[3] above.
 * Reply: {count, subnets}.
 *
 * Every key expires by itself: the window after its length, the day's after
 * the day.
 */
export const FUNCTION_NAME = 'proxylist_admit_v2';
export const UNDO_FUNCTION_NAME = 'proxylist_undo_v2';
export const USAGE_FUNCTION_NAME = 'proxylist_usage_v2';

export const LIBRARY = `#!lua name=proxylist_v2
local DAY_MS = 86400000
local OFFSET_MS = 7200000

local function day_of(ms)
  return math.floor((ms + OFFSET_MS) / DAY_MS)
end

local function admit(keys, args)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local per_window = tonumber(args[1])
  local window_ms = tonumber(args[2])
  local daily = tonumber(args[3])
  local subnets = tonumber(args[4])
  local subnet = args[5]
  local deadline = tonumber(args[6])
  if deadline >= 0 and now > deadline then return {4, 0, 0, -1, 0, 0, now} end
  local day = day_of(now)
  local to_midnight = (day + 1) * DAY_MS - OFFSET_MS - now

  local state = redis.call('HMGET', keys[2], 'd', 'n')
  local same_day = tonumber(state[1]) == day
  local count = 0
  if same_day then count = tonumber(state[2]) or 0 end

  local new_subnet = false
  if subnets >= 0 then
    local seen = 0
    if same_day then
      new_subnet = redis.call('HEXISTS', keys[3], subnet) == 0
      if new_subnet then seen = redis.call('HLEN', keys[3]) end
    else
      new_subnet = true
    end
    if new_subnet and seen >= subnets then return {1, to_midnight, 0, -1, count, to_midnight, now} end
  end

  -- The stamps, newest first, hold at most per_window; those older than the
  -- window are counted from the tail (oldest last), each step O(1), and
  -- dropped only on an acceptance: the work is that of the stamps that aged
  -- out since, never that of the whole window.
  local used = 0
  local newest_age = -1
  local expired = 0
  if per_window >= 0 then
    local len = redis.call('LLEN', keys[1])
    while expired < len and now - tonumber(redis.call('LINDEX', keys[1], -1 - expired)) >= window_ms do expired = expired + 1 end
    used = len - expired
    if len > 0 then newest_age = now - tonumber(redis.call('LINDEX', keys[1], 0)) end
    if used >= per_window then
      local oldest_age = now - tonumber(redis.call('LINDEX', keys[1], per_window - 1))
      return {2, window_ms - oldest_age, used, newest_age, count, to_midnight, now}
    end
  end

  if daily >= 0 and count >= daily then return {3, to_midnight, used, newest_age, count, to_midnight, now} end

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
    for _ = 1, expired do redis.call('RPOP', keys[1]) end
    redis.call('LPUSH', keys[1], now)
    -- used < per_window stamps were in the window: the list may be one over, never more.
    if used + 1 > per_window then redis.call('LTRIM', keys[1], 0, per_window - 1) end
    redis.call('PEXPIRE', keys[1], window_ms + 1000)
    used = used + 1
    newest_age = 0
  end
  if subnets >= 0 then
    redis.call('HINCRBY', keys[3], subnet, 1)
    if new_subnet then redis.call('PEXPIRE', keys[3], to_midnight + 60000) end
  end
  return {0, 0, used, newest_age, count, to_midnight, now}
end

local function undo(keys, args)
  local stamp = args[1]
  local subnet = args[2]
  redis.call('LREM', keys[1], 1, stamp)
  if tonumber(redis.call('HGET', keys[2], 'd')) ~= day_of(tonumber(stamp)) then return 0 end
  redis.call('HINCRBY', keys[2], 'n', -1)
  if subnet ~= '' and redis.call('HINCRBY', keys[3], subnet, -1) <= 0 then redis.call('HDEL', keys[3], subnet) end
  return 1
end

local function usage(keys, args)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local state = redis.call('HMGET', keys[1], 'd', 'n')
  if tonumber(state[1]) ~= day_of(now) then return {0, 0} end
  return {tonumber(state[2]) or 0, redis.call('HLEN', keys[2])}
end

redis.register_function('${FUNCTION_NAME}', admit)
redis.register_function('${UNDO_FUNCTION_NAME}', undo)
redis.register_function{function_name='${USAGE_FUNCTION_NAME}', callback=usage, flags={'no-writes'}}
`;

export const keysOf = (id: string): string[] => {
  const tag = `{pl:${id.slice(0, 32)}}`;
  return [`${tag}:w`, `${tag}:d`, `${tag}:n`];
};
