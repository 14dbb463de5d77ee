-- Area: foundation. Seed: seed 004 "Contracts & Invariants" (typed, checked input), applied to every area.
--
-- Shared argument checks: the input checks every area's functions use, so a bad argument gets the same SQLSTATE,
-- message and column diagnostic wherever it is given (docs/errors.md).
--
-- NULL and blank text (memsub._require_text), closed lists (memsub._check_one_of), ranges and finiteness
-- (memsub._check_unit, memsub._check_finite*), JSON types, and vectors: every vector is checked against the
-- installation's dimension (memsub.vector_dimension) and for a usable norm, whether given as a vector, a JSON
-- array or a double precision[]. Names match by one rule everywhere (memsub.normalize_text). A function checks its
-- text arguments against the max_text_chars limit (sql/015_limits.sql) in one call, memsub._check_text_limits,
-- which names the first over it in the order given.

-- Input checks -----------------------------------------------------------------------------------------------

-- White space is what Unicode counts as such: PostgreSQL's classes ([:space:], \s) follow the C library, which leaves
-- out the no-break spaces of text copied from web pages (U+00A0, U+2007, U+202F) and the next-line control
-- (U+0085); they are named beside [:space:]. memsub.normalize_text collapses the same class.
create or replace function memsub._is_blank(p_value text) returns boolean
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select p_value !~ '[^[:space:]\u0085\u00a0\u2007\u202f]' $$;
comment on function memsub._is_blank(text) is
    'Whether a text holds nothing but white space of any kind (spaces, tabs, line breaks, no-break spaces): the '
    'rule every blank check follows. NULL for NULL.';

create or replace function memsub._require_text(p_value text, p_field text) returns text
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is null then
        raise exception 'field "%" is required', p_field using errcode = '23502', column = p_field;
    end if;
    if memsub._is_blank(p_value) then
        raise exception 'field "%" must not be blank', p_field using errcode = '22023', column = p_field;
    end if;
    -- Each run of whitespace becomes one space, then the spaces at either end go.
    return btrim(regexp_replace(p_value, '[[:space:]\u0085\u00a0\u2007\u202f]+', ' ', 'g'));
end
$$;
comment on function memsub._require_text(text, text) is
    'A required text field, trimmed with each run of whitespace made one space; NULL raises 23502 and blank (only '
    'whitespace of any kind) 22023, naming the field.';

create or replace function memsub._optional_text(p_value text) returns text
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
-- The form memsub._require_text stores, for a field that may be absent: an agent or task id written optionally
-- here and required there, or read back as a filter, is then the same key however its whitespace was typed.
-- _require_text is called only for a value it accepts (not NULL, not blank), so it never raises here.
as $$ select case when not memsub._is_blank(p_value) then memsub._require_text(p_value, 'value') end $$;
comment on function memsub._optional_text(text) is
    'An optional text field in the form memsub._require_text stores (trimmed, each run of whitespace one space); '
    'NULL for NULL or blank (only whitespace of any kind), which counts as absent.';

create or replace function memsub._check_filter_values(p_values text[], p_field text) returns void
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
    v_value text;
begin
    -- A filter value that no stored value can equal: stored text is never blank, and NULL equals nothing. Such a
    -- filter would answer as if nothing matched. NULL for the whole filter means no filter.
    foreach v_value in array coalesce(p_values, '{}') loop
        if v_value is null or memsub._is_blank(v_value) then
            raise exception 'field "%" must hold non-blank values: % matches nothing', p_field,
                coalesce(quote_literal(v_value), 'NULL')
                using errcode = '22023', column = p_field;
        end if;
    end loop;
end
$$;
comment on function memsub._check_filter_values(text[], text) is
    'Refuses (22023 naming the field) a filter holding a NULL or blank value, which no stored value equals; a '
    'NULL filter (no filter) passes.';

create or replace function memsub._check_no_null_elements(p_values anyarray, p_field text) returns void
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
    v_place bigint;
begin
    -- A list that is stored as a list of strings or ids: a NULL element in it is a row no reader can take for one.
    select u.place - 1 into v_place from unnest(p_values) with ordinality as u(element, place)
     where u.element is null limit 1;
    if found then
        raise exception 'field "%[%]" must not be NULL', p_field, v_place
            using errcode = '22023', column = format('%s[%s]', p_field, v_place);
    end if;
end
$$;
comment on function memsub._check_no_null_elements(anyarray, text) is
    'Refuses (22023 naming the element: field[i], counted from 0) an array argument holding a NULL element; a '
    'NULL or empty array passes.';

create or replace function memsub._check_no_blank_elements(p_values text[], p_field text) returns void
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
    v_place bigint;
begin
    -- A list of names (a reflection's entities, a summary's key entities): a blank one names nothing, and no
    -- reader or filter could match it (memsub._check_filter_values refuses a blank filter value).
    select u.place - 1 into v_place from unnest(p_values) with ordinality as u(element, place)
     where memsub._is_blank(u.element) limit 1;
    if found then
        raise exception 'field "%[%]" must not be blank', p_field, v_place
            using errcode = '22023', column = format('%s[%s]', p_field, v_place);
    end if;
end
$$;
comment on function memsub._check_no_blank_elements(text[], text) is
    'Refuses (22023 naming the element: field[i], counted from 0) a list of names holding a blank element (only '
    'whitespace of any kind, memsub._is_blank); NULL elements pass (memsub._check_no_null_elements refuses them), '
    'as does a NULL or empty array.';

create or replace function memsub._check_text_list(p_values text[], p_field text) returns void
language sql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
    -- Every list of texts a writer stores is held to the same three rules: at most max_array_items elements, at
    -- most max_text_chars characters together (both 54000; together, like one text argument, so that
    -- max_array_items texts of max_text_chars each are not a gigabyte in one call), and no NULL element (22023).
    -- One call for a list, so that a writer's new list argument cannot get one of them and miss another.
    select memsub._check_limit(cardinality(p_values), 'max_array_items', p_field),
           memsub._check_limit((select sum(length(e)) from unnest(p_values) as e), 'max_text_chars', p_field),
           memsub._check_no_null_elements(p_values, p_field)
$$;
comment on function memsub._check_text_list(text[], text) is
    'Refuses a list of texts a writer stores when it holds more than max_array_items elements or more than '
    'max_text_chars characters together (54000 naming the field, memsub._check_limit), or a NULL element (22023 '
    'naming field[i], memsub._check_no_null_elements). A NULL or empty array passes.';

create or replace function memsub._check_time_range(p_since timestamptz, p_until timestamptz) returns void
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_since >= p_until then
        raise exception 'field "until" (%) must be after since (%): the range [since, until) is empty', p_until,
            p_since using errcode = '22023', column = 'until';
    end if;
end
$$;
comment on function memsub._check_time_range(timestamptz, timestamptz) is
    'Refuses (22023 naming until) a time filter [since, until) that holds no time; either bound may be NULL (open).';

-- The arguments the fused searches share (hybrid_search, memory_search, entity_search): k (at least 1, at most
-- the installation's max_k limit, 54000 above it, like every other search), rrf_k, and a query vector or text.
drop function if exists memsub._check_blank_query_text(vector, text);
create or replace function memsub._check_fused_search(p_k integer, p_rrf_k integer, p_query vector, p_query_text text)
returns void
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
begin
    perform memsub._check_count(p_k, 'max_k', 'k');
    if p_rrf_k is null or p_rrf_k < 0 then
        raise exception 'field "rrf_k" must be >= 0, not %', p_rrf_k using errcode = '22023', column = 'rrf_k';
    end if;
    if p_query is null and p_query_text is null then
        raise exception 'field "query" or "query_text" is required' using errcode = '23502', column = 'query';
    end if;
    -- Without a query vector the words are the whole query: blank ones would match nothing, and the search would
    -- answer as if nothing matched.
    if p_query is null and memsub._is_blank(p_query_text) then
        raise exception 'field "query_text" must not be blank when no query vector is given'
            using errcode = '22023', column = 'query_text';
    end if;
    perform memsub._check_vector(p_query, 'query');
end
$$;
comment on function memsub._check_fused_search(integer, integer, vector, text) is
    'Checks the arguments the fused searches (hybrid_search, memory_search, entity_search) share: k at least 1 '
    '(22023) and within the max_k limit (54000), rrf_k not negative, a query vector or text (23502) that is not '
    'blank text alone (22023), a usable query vector.';

create or replace function memsub._check_text_limits(variadic p_name_value text[]) returns bigint
language plpgsql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_max     bigint;
    v_length  bigint;
    v_longest bigint;
begin
    if coalesce(array_length(p_name_value, 1), 0) % 2 <> 0 then
        raise exception 'field "name_value" must hold field name and value pairs, not % elements',
            array_length(p_name_value, 1)
            using errcode = '22023', column = 'name_value';
    end if;
    for i in 1 .. coalesce(array_length(p_name_value, 1), 0) by 2 loop
        v_length := length(p_name_value[i + 1]);
        if v_length is not null then
            v_max := coalesce(v_max, memsub.limit_value('max_text_chars'));
            if v_length > v_max then
                perform memsub._check_limit(v_length, 'max_text_chars', p_name_value[i]);
            end if;
            v_longest := greatest(v_longest, v_length);
        end if;
    end loop;
    return v_longest;
end
$$;
comment on function memsub._check_text_limits(text[]) is
    'Checks text arguments, given as field name and value pairs, against max_text_chars in order: the first over '
    'the limit raises what memsub._check_limit raises for it (54000 naming the field); NULL values pass. Returns '
    'the greatest length (NULL when every value is NULL).';

-- The texts a table keys a row by, held together to max_key_bytes: a B-tree entry holds about 2.7 kB, and a longer
-- key fails on PostgreSQL's own "index row size" error, which names no field.
create or replace function memsub._check_key_bytes(variadic p_name_value text[]) returns void
language plpgsql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_total   bigint := 0;
    v_longest bigint := -1;
    v_field   text;
begin
    for i in 1 .. coalesce(array_length(p_name_value, 1), 0) by 2 loop
        if octet_length(p_name_value[i + 1]) > v_longest then
            v_longest := octet_length(p_name_value[i + 1]);
            v_field := p_name_value[i];
        end if;
        v_total := v_total + coalesce(octet_length(p_name_value[i + 1]), 0);
    end loop;
    perform memsub._check_limit(v_total, 'max_key_bytes', v_field);
end
$$;
comment on function memsub._check_key_bytes(text[]) is
    'Checks the texts one row is keyed by, given as field name and value pairs, against max_key_bytes together '
    '(their bytes added up): over the limit raises what memsub._check_limit raises, naming the longest field.';

create or replace function memsub.normalize_text(p_value text) returns text
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
-- One Unicode composition first (NFC: an accented letter typed as a letter and a combining mark becomes the one
-- character most keyboards type), then whitespace of any kind made one space and trimmed, as memsub._require_text
-- does, then lower case. The generated source_key / target_key, the entity-key index and
-- memsub._resolve_entities spell this expression out (a migration cannot call a function of sql/); a test keeps
-- them equal. normalize() needs a UTF8 database, which the migrator's preflight and the psql script check.
as $$ select lower(btrim(regexp_replace(normalize(p_value, nfc), '[[:space:]\u0085\u00a0\u2007\u202f]+', ' ', 'g'))) $$;
comment on function memsub.normalize_text(text) is
    'Matching form of a name: composed to Unicode NFC (a letter and its combining accent as one character), each '
    'run of whitespace (spaces, tabs, line breaks, no-break spaces) made one space, trimmed, lower case.';

create or replace function memsub._json_numbers_trimmed(p_value jsonb) returns jsonb
language sql immutable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
-- jsonb keeps a number as written (1.0 stays 1.0), while it compares 1 and 1.0 equal: the matching form writes
-- every number without trailing zeros, at any depth.
as $$
    select case jsonb_typeof(p_value)
               when 'number' then to_jsonb(trim_scale((p_value #>> '{}')::numeric))
               when 'object' then (select coalesce(jsonb_object_agg(e.key, memsub._json_numbers_trimmed(e.value)),
                                                   '{}')
                                     from jsonb_each(p_value) as e)
               when 'array' then (select coalesce(jsonb_agg(memsub._json_numbers_trimmed(a.value) order by a.n), '[]')
                                    from jsonb_array_elements(p_value) with ordinality as a(value, n))
               else p_value end
$$;
comment on function memsub._json_numbers_trimmed(jsonb) is
    'The JSON value with every number written without trailing zeros (1.0 as 1, 1.50 as 1.5), at any depth.';

create or replace function memsub._normalize_json_value(p_value jsonb) returns text
language sql immutable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
    select case when jsonb_typeof(p_value) = 'string' then memsub.normalize_text(p_value #>> '{}')
                else memsub._json_numbers_trimmed(p_value)::text end
$$;
comment on function memsub._normalize_json_value(jsonb) is
    'Matching form of a JSON value: strings as memsub.normalize_text, any other value as its canonical JSON text '
    'with every number written without trailing zeros (1 and 1.0 match, as jsonb compares them).';

create or replace function memsub._words_query(p_config regconfig, p_text text) returns tsquery
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
-- Text already stored is searched as it was written, in either composition, so the query takes both forms when they
-- differ: its words composed (NFC) or its words decomposed (NFD), each parsed and stemmed by the configuration
-- (a stemmer may cut the two forms of one word differently). Unaccented text has one form and one query.
as $$
    select case when f.composed = f.decomposed then websearch_to_tsquery(p_config, f.composed)
                else websearch_to_tsquery(p_config, f.composed) || websearch_to_tsquery(p_config, f.decomposed) end
      from (select normalize(coalesce(p_text, ''), nfc) as composed,
                   normalize(coalesce(p_text, ''), nfd) as decomposed) f
$$;
comment on function memsub._words_query(regconfig, text) is
    'Internal: the full-text query (websearch syntax) of a search text, matching words stored with their accents '
    'composed (NFC) or decomposed (NFD): the two forms'' queries joined by OR when the text has accents, its one '
    'query otherwise. A NULL text is an empty query.';

create or replace function memsub._json_double(p_value jsonb, p_field text) returns double precision
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
    v_number numeric;
begin
    if p_value is null or jsonb_typeof(p_value) = 'null' then
        return null;
    end if;
    if jsonb_typeof(p_value) <> 'number' then
        raise exception 'field "%" must be a number', p_field using errcode = '22023', column = p_field;
    end if;
    -- JSON numbers are exact; double precision holds about 1e-308 to 1e308. A larger one has no double value (a
    -- cast would raise 22003 naming nothing); a smaller one is 0, as JSON readers take it.
    v_number := p_value::text::numeric;
    if abs(v_number) >= 1e308 then
        raise exception 'field "%" (%) is beyond the range of double precision', p_field, left(p_value::text, 40)
            using errcode = '22023', column = p_field;
    end if;
    return case when abs(v_number) < 1e-307 then 0 else v_number::double precision end;
end
$$;
comment on function memsub._json_double(jsonb, text) is
    'A JSON number as double precision: NULL for JSON null or none; 22023 naming the field for another type or a '
    'number beyond double precision''s range; a number too small for it is 0.';

create or replace function memsub._check_unit(p_value double precision, p_field text) returns double precision
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is not null and (p_value < 0 or p_value > 1 or p_value = 'NaN'::double precision) then
        raise exception 'field "%" must be between 0 and 1, not %', p_field, p_value
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_unit(double precision, text) is
    'Returns a value in [0, 1] (or NULL) unchanged; raises 22023 naming the field otherwise.';

-- A weight of a ranking formula: weights are relative, so their scale means nothing, and the largest finite ones
-- overflowed the score (hybrid_search: (vector_weight + text_weight) * (1 + importance_weight + recency_weight)
-- reached 1e616, raising 22003 naming nothing). At most 1e100 each, such a product stays below 1e201.
create or replace function memsub._check_weight(p_value double precision, p_field text) returns double precision
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is null or not (p_value >= 0 and p_value <= 1e100) then
        raise exception 'field "%" must be a finite number from 0 to 1e100, not %', p_field,
            coalesce(p_value::text, 'NULL')
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_weight(double precision, text) is
    'Returns a ranking weight from 0 to 1e100 unchanged; raises 22023 naming the field for NULL, NaN, a negative '
    'or infinite number, or one above 1e100 (weights are relative, and larger ones overflow the score).';

create or replace function memsub._check_expected_version(p_value integer) returns integer
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    -- No state is ever at a negative version: such an expectation is bad input, not a conflict a client would
    -- re-read and retry (40001).
    if p_value < 0 then
        raise exception 'field "expected_version" must be 0 or more, not %', p_value
            using errcode = '22023', column = 'expected_version';
    end if;
    return p_value;
end
$$;
comment on function memsub._check_expected_version(integer) is
    'Returns an expected version (or NULL, none stated) unchanged when it is 0 or more; raises 22023 naming '
    'expected_version for a negative one, which no state is ever at.';

create or replace function memsub._check_one_of(p_value text, p_allowed text[], p_field text) returns text
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is null then
        raise exception 'field "%" is required (one of %)', p_field, array_to_string(p_allowed, ', ')
            using errcode = '23502', column = p_field;
    end if;
    if p_value <> all(p_allowed) then
        raise exception 'field "%" must be one of %, not "%"', p_field, array_to_string(p_allowed, ', '), p_value
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_one_of(text, text[], text) is
    'Returns the value when it is one of the allowed values; raises 23502 (NULL) or 22023 naming the field.';

create or replace function memsub._check_json_type(p_value jsonb, p_type text, p_field text) returns jsonb
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is not null and jsonb_typeof(p_value) <> p_type then
        raise exception 'field "%" must be a JSON %, not %', p_field, p_type, jsonb_typeof(p_value)
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_json_type(jsonb, text, text) is
    'Returns the JSON value when it is NULL or of the given JSON type; raises 22023 naming the field otherwise.';

create or replace function memsub._check_object_keys(
    p_value jsonb, p_field text, p_keys text[], p_shape text, p_what text
) returns jsonb
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
    v_key text;
begin
    if jsonb_typeof(p_value) <> 'object' then
        raise exception 'field "%" must be an object %', p_field, p_shape
            using errcode = '22023', column = p_field;
    end if;
    select k into v_key from jsonb_object_keys(p_value) as k where k <> all(p_keys) order by k limit 1;
    if v_key is not null then
        raise exception 'field "%.%" is not part of %', p_field, v_key, p_what
            using errcode = '22023', column = p_field || '.' || v_key;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_object_keys(jsonb, text, text[], text, text) is
    'Returns the JSON value when it is an object with no key outside p_keys; raises 22023 naming the field (not an '
    'object, message showing p_shape) or the field and the first unknown key (not part of p_what) otherwise.';

create or replace function memsub.vector_dimension() returns integer
language sql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$ select s.value::integer from memsub.installation_settings s where s.name = 'vector_dimension' $$;
comment on function memsub.vector_dimension() is
    'Dimension of every vector column of this installation (recorded when migrating; 1536 unless memsub.vector_dimension was set).';

create or replace function memsub._check_vector(p_value vector, p_field text) returns vector
language plpgsql stable security invoker parallel safe
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    expected integer := memsub.vector_dimension();
begin
    if p_value is not null and vector_dims(p_value) <> expected then
        perform memsub._refuse_wrong_dimension(p_field, vector_dims(p_value));
    end if;
    -- pgvector computes a cosine distance from norms summed in single precision: a zero vector, or one whose
    -- squares underflow or overflow single precision, has NaN distances. A vector's distance to itself is NaN
    -- exactly then.
    if p_value is not null and cosine_distance(p_value, p_value) = 'NaN'::double precision then
        perform memsub._refuse_vector_without_norm(p_field);
    end if;
    return p_value;
end
$$;
comment on function memsub._check_vector(vector, text) is
    'Returns the vector when it is NULL or has the installation''s dimension and a usable norm (not a zero vector, '
    'squares representable in single precision); raises 22023 naming the field otherwise.';

-- The refusal of a vector whose length is not the installation's dimension, for every door that takes a vector of
-- it: _check_vector, and _json_vector and _float_array_vector for more numbers than pgvector's vector holds (16000),
-- which pgvector itself refuses with 54000 naming no field. Called only on the failing branch.
create or replace function memsub._refuse_wrong_dimension(p_field text, p_dims integer) returns void
language plpgsql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    raise exception 'field "%" must have % dimensions (this installation''s vector_dimension), not %',
        p_field, memsub.vector_dimension(), p_dims
        using errcode = '22023', column = p_field;
end
$$;
comment on function memsub._refuse_wrong_dimension(text, integer) is
    'Internal: raises 22023 naming p_field for a vector of p_dims numbers where the installation''s '
    'vector_dimension is required.';

-- The refusal of a vector without a cosine distance, for every door that takes a vector: _check_vector (the
-- installation's dimension) and the LangGraph store and ADK memory doors (vectors of any dimension), which find
-- the vector set-based and call this only to refuse it. Called only on the failing branch: no cost to a valid call.
create or replace function memsub._refuse_vector_without_norm(p_field text, p_caller text default null)
returns void
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    raise exception '%field "%" must have a positive, finite norm (a zero vector, or elements too small or too '
                    'large to square in single precision, has no cosine distance)',
        coalesce(p_caller || ': ', ''), p_field
        using errcode = '22023', column = p_field;
end
$$;
comment on function memsub._refuse_vector_without_norm(text, text) is
    'Internal: raises 22023 naming p_field (its message prefixed by p_caller when given) for a vector whose cosine '
    'distance to itself is NaN: a zero vector, or one whose squares under- or overflow single precision.';

create or replace function memsub._check_finite(p_value double precision, p_field text) returns double precision
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is not null
       and (p_value = 'NaN'::double precision or p_value in ('Infinity'::double precision, '-Infinity'::double precision)) then
        raise exception 'field "%" must be a finite number, not %', p_field, p_value
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_finite(double precision, text) is
    'Returns the number (or NULL) unchanged when it is finite; raises 22023 naming the field for NaN and infinities.';

create or replace function memsub._check_finite_time(p_value timestamptz, p_field text) returns timestamptz
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is not null and not isfinite(p_value) then
        raise exception 'field "%" must be a finite time, not %; leave it NULL for an open bound', p_field, p_value
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_finite_time(timestamptz, text) is
    'Returns the timestamp (or NULL) unchanged when it is finite; raises 22023 naming the field for +/-infinity.';

-- A time a function stores, and returns on later reads: PostgreSQL holds years 4713 BC to 294276, ISO 8601 clients
-- (Python's datetime among them) years 1 to 9999, so a row holding a time past them could be written but no longer
-- read by such a client. The envelope's timestamp and ttl follow the same rule (memsub._envelope_timestamp).
create or replace function memsub._check_stored_time(p_value timestamptz, p_field text) returns timestamptz
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if p_value is not null and (not isfinite(p_value) or p_value < '0001-01-01 00:00:00+00'
                                or p_value >= '10000-01-01 00:00:00+00') then
        perform memsub._check_finite_time(p_value, p_field);
        raise exception 'field "%" (%) falls outside years 1 to 9999 in UTC, the times ISO 8601 clients hold',
            p_field, p_value
            using errcode = '22008', column = p_field;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_stored_time(timestamptz, text) is
    'Returns a time to be stored (or NULL) unchanged when it lies in years 1 to 9999 in UTC, what ISO 8601 clients '
    'hold; raises 22023 naming the field for +/-infinity (memsub._check_finite_time), 22008 for any other time '
    'outside them.';

create or replace function memsub._check_finite_interval(p_value interval, p_field text) returns interval
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is not null and not isfinite(p_value) then
        raise exception 'field "%" must be a finite interval, not %', p_field, p_value
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_finite_interval(interval, text) is
    'Returns the interval (or NULL) unchanged when it is finite; raises 22023 naming the field for +/-infinity.';

create or replace function memsub._json_vector(p_value jsonb, p_field text) returns vector
language plpgsql stable security invoker parallel safe
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_vector vector;
begin
    if p_value is null or jsonb_typeof(p_value) = 'null' then
        return null;
    end if;
    if jsonb_typeof(p_value) <> 'array' then
        raise exception 'field "%" must be a non-empty JSON array of numbers within single precision range', p_field
            using errcode = '22023', column = p_field;
    end if;
    -- A JSON array of numbers is written out as the text pgvector reads ([1, 2.5, ...]); the vector's own input
    -- refuses everything else: an empty array, an element that is not a number (a string, true, null, an array,
    -- an object), and a number beyond single precision. Its errors (class 22) become the one message naming the
    -- field. Letting the cast judge costs half of testing every element with a path query first.
    begin
        v_vector := (p_value::text)::vector;
    exception
        when data_exception then
            raise exception 'field "%" must be a non-empty JSON array of numbers within single precision range',
                            p_field
                using errcode = '22023', column = p_field;
        -- More numbers than pgvector's vector holds (16000): a wrong length like any other, not 54000 without a
        -- field.
        when program_limit_exceeded then
            perform memsub._refuse_wrong_dimension(p_field, jsonb_array_length(p_value));
    end;
    return memsub._check_vector(v_vector, p_field);
end
$$;
comment on function memsub._json_vector(jsonb, text) is
    'A vector given as a JSON array of numbers, checked by memsub._check_vector; raises 22023 naming the field for '
    'anything else (non-numbers, numbers beyond single precision, an empty array, more numbers than pgvector '
    'holds). NULL for JSON null.';

create or replace function memsub._json_query_vector(p_value jsonb, p_field text, p_caller text) returns vector
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, memsub, public, pg_temp
as $$
begin
    -- No query, no check: the block that catches the cast's errors is a subtransaction, entered only for a value.
    if p_value is null then
        return null;
    end if;
    begin
        return (p_value #>> '{}')::vector;
    exception when others then
        raise exception '%: % must be an array of numbers', p_caller, p_field
            using errcode = '22023', column = p_field;
    end;
end
$$;
comment on function memsub._json_query_vector(jsonb, text, text) is
    'A query vector of any dimension given as a JSON array of numbers (NULL for NULL), for searches that compare it '
    'only with stored vectors of its own dimension; raises 22023 naming the field, after the caller''s prefix, for '
    'anything that is not a vector.';

create or replace function memsub._float_array_vector(p_value double precision[], p_field text) returns vector
language plpgsql stable security invoker parallel safe
set search_path = pg_catalog, memsub, public, pg_temp
as $$
begin
    if p_value is null then
        return null;
    end if;
    if cardinality(p_value) = 0
       or exists (select from unnest(p_value) as x(e)
                   where x.e is null or x.e = 'NaN'::double precision or abs(x.e) > 3.4028234e38) then
        raise exception 'field "%" must be a non-empty array of finite numbers within single precision range', p_field
            using errcode = '22023', column = p_field;
    end if;
    -- The length first: pgvector refuses more than 16000 numbers with 54000 and no field.
    if cardinality(p_value) <> memsub.vector_dimension() then
        perform memsub._refuse_wrong_dimension(p_field, cardinality(p_value));
    end if;
    return memsub._check_vector(p_value::vector, p_field);
end
$$;
comment on function memsub._float_array_vector(double precision[], text) is
    'A vector given as double precision[], checked by memsub._check_vector; raises 22023 naming the field for an '
    'empty array, NULL, NaN or infinite elements, or elements beyond single precision. NULL for NULL.';

create or replace function memsub._check_half_life(p_half_life interval) returns interval
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_half_life is null or p_half_life < interval '1 second' or not isfinite(p_half_life) then
        raise exception 'field "half_life" must be a finite interval of at least one second, not %', p_half_life
            using errcode = '22023', column = 'half_life';
    end if;
    return p_half_life;
end
$$;
comment on function memsub._check_half_life(interval) is
    'Returns a finite half-life of at least one second; raises 22023 naming half_life otherwise.';

grant select on memsub.installation_settings to memsub_app, memsub_analyst;
grant execute on function
    memsub.vector_dimension(), memsub.normalize_text(text), memsub._optional_text(text), memsub._is_blank(text)
    to memsub_app, memsub_analyst;
-- Half-lives: memory decay and search recency (invoker functions), and learn_importance, which runs as
-- memsub_retrieval_owner.
-- The text limit, granted as memsub._check_limit is (sql/015_limits.sql): every caller of that may call this.
grant execute on function memsub._check_text_limits(text[]) to memsub_app, memsub_analyst, memsub_retrieval_owner;
grant execute on function memsub._check_key_bytes(text[]) to memsub_app;
-- The fused searches' shared check, for the invoker searches (hybrid_search, memory_search, entity_search).
grant execute on function memsub._check_fused_search(integer, integer, vector, text) to memsub_app, memsub_analyst;
-- The filter checks, for the invoker searches and graph reads.
grant execute on function memsub._check_filter_values(text[], text), memsub._check_time_range(timestamptz, timestamptz)
    to memsub_app, memsub_analyst;
grant execute on function memsub._check_half_life(interval) to memsub_app, memsub_analyst, memsub_retrieval_owner;
-- The ranking weights of hybrid_search, an invoker search.
grant execute on function memsub._check_weight(double precision, text) to memsub_app, memsub_analyst;
grant execute on function memsub._json_double(jsonb, text) to memsub_app, memsub_analyst, memsub_retrieval_owner;
-- The text legs' query: hybrid_search's keyword leg runs as memsub_retrieval_owner, the others as their caller.
grant execute on function memsub._words_query(regconfig, text) to memsub_app, memsub_analyst, memsub_retrieval_owner;
