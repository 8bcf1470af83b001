-- 008_reserved — an empty migration: version 8 keeps the numbering without gaps for the
-- migration that takes this number; it changes nothing. `{{schema}}` is replaced by the quoted schema.
SELECT 1;
