"""Tapes and drives as operators set them: the use cases behind the admin API's `/tapes` and `/drives` and
`carousel tape` / `carousel drive` (docs/admin.md, "Tapes and drives")."""
