-- Which series each sample belongs to: 'first' (the pairs the judge decided on) or
-- 'confirmation' (the fresh series an acceptance is confirmed by). Samples recorded before this
-- column have NULL: their rounds run on from the first series into the confirmation with
-- nothing in the row to say where one ended.
ALTER TABLE samples ADD COLUMN series TEXT CHECK (series IN ('first', 'confirmation'));
