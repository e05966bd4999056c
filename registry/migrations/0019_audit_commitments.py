"""Audit: entries commit who did what (entry format 3, registry/audit/entries.py: actor_commitment).

The user's and token's ids join the actor's name on queued and numbered entries; a format-3 entry's `who` is a keyed
commitment to the three. Adding nullable columns rewrites no row (the append-only triggers see no UPDATE); entries
written before keep format 1 or 2 and NULL ids.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("registry", "0018_decision_flagging")]

    operations = [
        migrations.AddField("auditentry", "actor_user", models.BigIntegerField(null=True)),
        migrations.AddField("auditentry", "actor_token", models.BigIntegerField(null=True)),
        migrations.AddField("auditqueued", "actor_user", models.BigIntegerField(null=True)),
        migrations.AddField("auditqueued", "actor_token", models.BigIntegerField(null=True)),
        migrations.AlterField(
            "auditentry", "format",
            models.PositiveSmallIntegerField(
                default=2, help_text="entry format (registry/audit/entries.py): 1 before migration 0011 (restricted), "
                                     "2 since (public), 3 since 0019 (public, commits the actor)")),
    ]
