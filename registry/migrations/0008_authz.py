"""Tokens now carry at most their owner's rights (registry.policy). Keep working what worked before.

Script accounts made by `create_token` belonged to no role group and their `submit` tokens worked through the
token's scopes alone. Under the policy such an owner only reads, so each of them (no role group, not staff, not an
agent's account, with a live submit token) becomes a submitter. Users in a role group keep exactly that role: a
viewer who minted a submit token through the old hole gains nothing.
"""

from django.db import migrations

ROLES = ("viewer", "submitter", "admin")


def keep_script_accounts_submitting(apps, schema_editor):
    group_model = apps.get_model("auth", "Group")
    token_model = apps.get_model("registry", "ApiToken")
    agent_model = apps.get_model("registry", "Agent")
    submitter, _ = group_model.objects.get_or_create(name="submitter")
    agent_users = set(agent_model.objects.values_list("user_id", flat=True))
    agent_tokens = set(agent_model.objects.values_list("token_id", flat=True))
    seen = set()
    for token in token_model.objects.filter(revoked_at__isnull=True).select_related("user"):
        user = token.user
        if (user.pk in seen or token.pk in agent_tokens or user.pk in agent_users or "submit" not in token.scopes
                or user.is_staff or user.is_superuser or user.groups.filter(name__in=ROLES).exists()):
            continue
        user.groups.add(submitter)
        seen.add(user.pk)


class Migration(migrations.Migration):
    dependencies = [("registry", "0007_catalogue_cells"), ("auth", "0012_alter_user_first_name_max_length")]

    operations = [migrations.RunPython(keep_script_accounts_submitting, migrations.RunPython.noop)]
