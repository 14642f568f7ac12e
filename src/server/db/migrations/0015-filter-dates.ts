import type { Migration } from '../migrate.js';

/**
 * Issue 14: `$filters` date conditions run by PostgreSQL (data-sources/sql/postgres-filters.ts). `iar_date_sign(v,
 * is_time, unit, target)` is one check of data-sources/query/dates.ts `datePasses` in PL/pgSQL: the sign of the json value `v`
 * (a number: epoch ms; a string: `YYYY-MM-DD`, `YYYY-MM-DD HH:mm[:ss[.fff]][Z|±hh:mm]`, `HH:mm[:ss]`, after JS's
 * trim) at `unit` precision against `target`, or NULL when it is not a date. It follows JS where JS is odd: years
 * 0–99 are read as 1900–1999 (Date.UTC), a zone's minutes are not checked, fractions of a second are
 * `floor(Number('0.' + digits) * 1000)` (the same double arithmetic), a date past ±8.64e15 ms is NaN and
 * compares as equal. Calendar arithmetic is integer (days from the civil date and back), so every year JS can
 * hold is read, BC too; an epoch number is truncated first for calendar units (as `new Date`) and divided in
 * doubles for hour, minute and second (as Math.floor(ms / step) * step). Only a time-of-day condition on an epoch
 * number that is not an integer a bigint holds (a fraction, or past 2^63) raises 22023 (the JS evaluator answers then): JS's exact `%` on any
 * double is not reproduced. A value near the largest double whose rounding overflows, or a tiny one (5e-324) whose
 * division by an hour, minute or second underflows, raises 22003 likewise (PostgreSQL's float8 refuses both; JS
 * goes on with Infinity or 0). Found by review: 5.9M random and 4.0M exhaustive comparisons with dates.ts (then `dateSign`, the same per-check reading) agreed
 * otherwise. SQLite calls dates.ts itself (`datePasses`, db/sqlite-functions.ts).
 * No `?` in the body (migrations go through the `?` placeholder translation) and no dollar quoting.
 */
const WS = String.raw`[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]`;

const body = String.raw`
DECLARE
  t text := json_typeof(v);
  s text;
  m text[];
  x float8;
  xs float8;
  y bigint; mo bigint; d bigint; hh bigint; mi bigint; ss bigint;
  ms bigint;
  has_time boolean := true;
  time_of_day bigint;
  at bigint;
  step bigint;
  days bigint; era bigint; doe bigint; yoe bigint; doy bigint; mp bigint;
BEGIN
  IF t = 'number' THEN
    x := (v::text)::float8;
    IF is_time THEN
      -- ms % 86400000 in JS is exact on any double; here on integers a bigint holds.
      IF x <> trunc(x) OR abs(x) >= 9223372036854775807::float8 THEN
        RAISE EXCEPTION 'A time-of-day condition on the epoch number % is left to the JS evaluator', v::text USING ERRCODE = '22023';
      END IF;
      ms := x::bigint;
    ELSIF unit IN ('hour', 'minute', 'second') THEN
      -- Math.floor(ms / step) * step: the same double arithmetic.
      xs := CASE unit WHEN 'hour' THEN 3600000 WHEN 'minute' THEN 60000 ELSE 1000 END;
      x := floor(x / xs) * xs;
      RETURN CASE WHEN x < target THEN -1 WHEN x > target THEN 1 ELSE 0 END;
    ELSIF abs(x) > 8640000000000000 THEN
      -- new Date(ms) past its range is NaN, which compares as equal.
      RETURN 0;
    ELSE
      -- new Date(ms) truncates a fraction.
      ms := trunc(x)::bigint;
    END IF;
  ELSIF t = 'string' THEN
    s := regexp_replace(v #>> '{}', '^${WS}+|${WS}+$', '', 'g');
    m := regexp_match(s, '^([0-9]{4})-([0-9]{2})-([0-9]{2})$');
    IF m IS NOT NULL THEN
      has_time := false;
      hh := 0; mi := 0; ss := 0;
    ELSE
      m := regexp_match(s, '^([0-9]{4})-([0-9]{2})-([0-9]{2})[ Tt]([0-9]{2}):([0-9]{2})(:([0-9]{2})([.]([0-9]{1,9})){0,1}){0,1}${WS}*([Zz]|[+-][0-9]{2}:{0,1}[0-9]{2}){0,1}$');
      IF m IS NULL THEN
        m := regexp_match(s, '^([0-9]{1,2}):([0-9]{2})(:([0-9]{2})){0,1}$');
        IF m IS NULL THEN RETURN NULL; END IF;
        hh := m[1]::bigint; mi := m[2]::bigint; ss := COALESCE(m[4]::bigint, 0);
        IF hh > 23 OR mi > 59 OR ss > 59 THEN RETURN NULL; END IF;
        -- A time of day: only against a time operand.
        IF NOT is_time THEN RETURN NULL; END IF;
        step := CASE unit WHEN 'hour' THEN 3600 WHEN 'minute' THEN 60 ELSE 1 END;
        at := ((hh * 3600 + mi * 60 + ss) / step) * step;
        RETURN CASE WHEN at < target THEN -1 WHEN at > target THEN 1 ELSE 0 END;
      END IF;
      hh := m[4]::bigint; mi := m[5]::bigint; ss := COALESCE(m[7]::bigint, 0);
      IF hh > 23 OR mi > 59 OR ss > 59 THEN RETURN NULL; END IF;
    END IF;
    y := m[1]::bigint; mo := m[2]::bigint; d := m[3]::bigint;
    -- Date.UTC reads years 0-99 as 1900-1999.
    IF y BETWEEN 0 AND 99 THEN y := y + 1900; END IF;
    IF mo < 1 OR mo > 12 OR d < 1 OR d > (CASE WHEN mo = 2 THEN (CASE WHEN (y % 4 = 0 AND y % 100 <> 0) OR y % 400 = 0 THEN 29 ELSE 28 END)
        WHEN mo IN (4, 6, 9, 11) THEN 30 ELSE 31 END) THEN
      RETURN NULL;
    END IF;
    -- Days from the civil date (Howard Hinnant's days_from_civil).
    yoe := y - (CASE WHEN mo <= 2 THEN 1 ELSE 0 END);
    era := (CASE WHEN yoe >= 0 THEN yoe ELSE yoe - 399 END) / 400;
    yoe := yoe - era * 400;
    doy := (153 * (CASE WHEN mo > 2 THEN mo - 3 ELSE mo + 9 END) + 2) / 5 + d - 1;
    doe := yoe * 365 + yoe / 4 - yoe / 100 + doy;
    days := era * 146097 + doe - 719468;
    ms := days * 86400000 + hh * 3600000 + mi * 60000 + ss * 1000;
    IF has_time AND m[9] IS NOT NULL THEN
      ms := ms + floor(('0.' || m[9])::float8 * 1000)::bigint;
    END IF;
    IF has_time AND m[10] IS NOT NULL AND upper(m[10]) <> 'Z' THEN
      ms := ms - (CASE WHEN left(m[10], 1) = '-' THEN -1 ELSE 1 END)
        * (substr(replace(m[10], ':', ''), 2, 2)::bigint * 60 + substr(replace(m[10], ':', ''), 4, 2)::bigint) * 60000;
    END IF;
  ELSE
    RETURN NULL;
  END IF;

  IF is_time THEN
    IF NOT has_time THEN RETURN NULL; END IF;
    time_of_day := ((ms % 86400000) + 86400000) % 86400000 / 1000;
    step := CASE unit WHEN 'hour' THEN 3600 WHEN 'minute' THEN 60 ELSE 1 END;
    at := (time_of_day / step) * step;
  ELSIF unit IN ('hour', 'minute', 'second') THEN
    step := CASE unit WHEN 'hour' THEN 3600000 WHEN 'minute' THEN 60000 ELSE 1000 END;
    at := ms - ((ms % step) + step) % step;
  ELSE
    -- new Date(ms) past its range is NaN, which compares as equal.
    IF abs(ms) > 8640000000000000 THEN RETURN 0; END IF;
    days := (ms - ((ms % 86400000) + 86400000) % 86400000) / 86400000;
    -- The civil date of the day (Howard Hinnant's civil_from_days).
    days := days + 719468;
    era := (CASE WHEN days >= 0 THEN days ELSE days - 146096 END) / 146097;
    doe := days - era * 146097;
    yoe := (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    y := yoe + era * 400;
    doy := doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp := (5 * doy + 2) / 153;
    d := doy - (153 * mp + 2) / 5 + 1;
    mo := CASE WHEN mp < 10 THEN mp + 3 ELSE mp - 9 END;
    IF mo <= 2 THEN y := y + 1; END IF;
    IF unit = 'year' THEN mo := 1; d := 1; ELSIF unit = 'month' THEN d := 1; END IF;
    -- Date.UTC of those parts: years 0-99 read as 1900-1999 again.
    IF y BETWEEN 0 AND 99 THEN y := y + 1900; END IF;
    yoe := y - (CASE WHEN mo <= 2 THEN 1 ELSE 0 END);
    era := (CASE WHEN yoe >= 0 THEN yoe ELSE yoe - 399 END) / 400;
    yoe := yoe - era * 400;
    doy := (153 * (CASE WHEN mo > 2 THEN mo - 3 ELSE mo + 9 END) + 2) / 5 + d - 1;
    doe := yoe * 365 + yoe / 4 - yoe / 100 + doy;
    at := (era * 146097 + doe - 719468) * 86400000;
    -- Date.UTC past Date's range is NaN too (the first year or month of the range starts before it).
    IF abs(at) > 8640000000000000 THEN RETURN 0; END IF;
  END IF;
  RETURN CASE WHEN at < target THEN -1 WHEN at > target THEN 1 ELSE 0 END;
END`;

const quoted = `'${body.replace(/'/g, "''")}'`;

export const filterDateMigrations: Migration[] = [
  {
    id: '0015_filter_dates',
    // SQLite defines the function on each connection (db/sqlite-functions.ts).
    up: [],
    postgres: [
      `CREATE OR REPLACE FUNCTION iar_date_sign(v json, is_time boolean, unit text, target bigint) RETURNS integer LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS ${quoted}`,
    ],
  },
];
