-- 0005: a per-account item counter, the example's hot path (issue 11).
--
-- POST /pouches/:id/items numbers each new item within its account:
-- `UPDATE accounts SET item_seq = item_seq + 1 ... RETURNING item_seq` first,
-- then the item INSERT and an event INSERT, in one transaction. The
-- account's row stays locked from the UPDATE until COMMIT, so concurrent
-- creates in one account queue on it: the hotspot `planck replay` names.

ALTER TABLE accounts ADD COLUMN item_seq bigint NOT NULL DEFAULT 0;
